import t from 'tap'
import { rooms } from '../../src/events.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'

/**
 * Timed snooze wake-ups (API.md section 17, docs/triage.md "Wake-ups"): within 10 s of `until`,
 * once, with several replicas, and through a restart.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('a timed snooze wakes once, within seconds, with a SYSTEM note and conversation:updated', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { SNOOZE_SWEEP_INTERVAL_MS: '200' } })
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  const until = new Date(Date.now() + 1200).toISOString()
  const res = await app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/snooze`, headers: ws.agent.headers, payload: { until } })
  t.equal(res.json().status, 'SNOOZED')
  events.clear() // the creation's conversation:updated was OPEN too
  const woke = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation?.id === conv.id && e.payload.conversation.status === 'OPEN', 10_000)
  const lateMs = Date.now() - Date.parse(until)
  t.ok(lateMs >= 0 && lateMs < 10_000, `woken ${lateMs} ms after until`)
  t.equal(woke.payload.conversation.snoozedUntil, null)
  const note = await events.waitFor((e) => e.event === 'message:new' && e.payload.conversationId === conv.id)
  t.match(note.payload.message, { senderType: 'SYSTEM', private: true, senderId: null })
  t.same(note.rooms, [rooms.workspace(ws.workspaceId)], 'members only: the visitor never sees the snooze')
  await sleep(600)
  const msgs = await app.deps.sql`SELECT sender_type FROM messages WHERE conversation_id = ${conv.id} AND sender_type = 'SYSTEM'`
  t.equal(msgs.length, 1, 'woken once')
  const vis = await app.inject({ method: 'GET', url: `/conversations/${conv.id}/messages`, headers: guest.headers })
  t.equal(vis.json().data.length, 0, 'the SYSTEM note is not in the visitor’s messages')
})

t.test('two replicas on one database wake each due conversation exactly once', async (t) => {
  const a = await build(t, { env: { SNOOZE_SWEEP_INTERVAL_MS: '100' } })
  const ws = await seedWorkspace(a.app)
  const guest = await seedGuest(a.app, ws)
  const ids: string[] = []
  for (let i = 0; i < 40; i++) ids.push((await startConversation(a.app, guest)).id)
  // Both replicas up before the snoozes fall due, all at the same moment.
  const b = await build(t, { databaseUrl: a.databaseUrl, env: { SNOOZE_SWEEP_INTERVAL_MS: '100' } })
  const until = new Date(Date.now() + 4000).toISOString()
  const snoozes = await Promise.all(
    ids.map((id, i) => (i % 2 ? a.app : b.app).inject({ method: 'PATCH', url: `/conversations/${id}/snooze`, headers: ws.agent.headers, payload: { until } })),
  )
  t.ok(snoozes.every((r) => r.statusCode === 200), 'all snoozed before until')
  const deadline = Date.parse(until) + 10_000
  let open = 0
  while (Date.now() < deadline) {
    const [r] = await a.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE id = ANY(${ids}::uuid[]) AND status = 'OPEN'`
    open = r.n
    if (open === ids.length) break
    await sleep(200)
  }
  t.equal(open, ids.length, 'all woken within 10 s of until')
  await sleep(500)
  const notes = await a.app.deps.sql<{ id: string; n: number }[]>`
    SELECT conversation_id AS id, count(*)::int AS n FROM messages WHERE conversation_id = ANY(${ids}::uuid[]) AND sender_type = 'SYSTEM' GROUP BY 1`
  t.equal(notes.length, ids.length)
  t.ok(notes.every((n) => n.n === 1), 'one SYSTEM note each: never woken twice')
})

t.test('a snooze survives a restart: an app closed before until, another started after, wakes it', async (t) => {
  const a = await build(t, { env: { SNOOZE_SWEEP_INTERVAL_MS: '100' } })
  const ws = await seedWorkspace(a.app)
  const conv = await startConversation(a.app, await seedGuest(a.app, ws))
  const until = new Date(Date.now() + 1000).toISOString()
  await a.app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/snooze`, headers: ws.agent.headers, payload: { until } })
  await a.app.close()
  await sleep(Math.max(0, Date.parse(until) - Date.now()) + 300)
  const probe = await build(t, { databaseUrl: a.databaseUrl, env: { JOBS_WORKER: 'false' } })
  const [before] = await probe.app.deps.sql`SELECT status FROM conversations WHERE id = ${conv.id}`
  t.equal(before.status, 'SNOOZED', 'nobody was running: still snoozed after until')
  const b = await build(t, { databaseUrl: a.databaseUrl, env: { SNOOZE_SWEEP_INTERVAL_MS: '100' } })
  let status = 'SNOOZED'
  for (let i = 0; i < 50 && status !== 'OPEN'; i++) {
    await sleep(100)
    ;[{ status }] = await b.app.deps.sql<{ status: string }[]>`SELECT status FROM conversations WHERE id = ${conv.id}`
  }
  t.equal(status, 'OPEN', 'the restarted app woke it')
})
