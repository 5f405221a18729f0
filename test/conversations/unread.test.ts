import fc from 'fast-check'
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { countersDelta, type CounterState } from '../../src/conversations/counters.js'
import { build, seedGuest, seedWorkspace, type SeededWorkspace } from '../helper.js'
import { bruteForceCounts, patch, send, startConversation, unreadCount } from './fixtures.js'
import type { App } from '../../src/app.js'

async function addChannel(app: App, ws: SeededWorkspace) {
  const id = randomUUID()
  await app.deps.sql`INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
                VALUES (${id}, ${ws.workspaceId}, 'Second', ${`ct_${id}`}, ${`is_${id}`})`
  return id
}

const state = fc.record({
  status: fc.constantFrom('OPEN', 'RESOLVED', 'CLOSED') as fc.Arbitrary<CounterState['status']>,
  deleted: fc.boolean(),
  assignedAgentId: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: null }),
  channelId: fc.constantFrom('ch1', 'ch2'),
  unreadCount: fc.nat({ max: 5 }),
})

t.test('countersDelta: no change is no delta, and deltas along any path add up to the end-to-end delta', async (t) => {
  fc.assert(
    fc.property(fc.option(state, { nil: null }), (s) => countersDelta(s, s).size === 0),
  )
  fc.assert(
    fc.property(fc.array(fc.option(state, { nil: null }), { minLength: 2, maxLength: 8 }), (path) => {
      const sum = new Map<string, { conversations: number; messages: number }>()
      for (let i = 1; i < path.length; i++) {
        for (const [scope, d] of countersDelta(path[i - 1], path[i])) {
          const s = sum.get(scope) ?? { conversations: 0, messages: 0 }
          sum.set(scope, { conversations: s.conversations + d.conversations, messages: s.messages + d.messages })
        }
      }
      for (const [k, v] of sum) if (v.conversations === 0 && v.messages === 0) sum.delete(k)
      const direct = countersDelta(path[0], path[path.length - 1])
      return JSON.stringify([...sum].sort()) === JSON.stringify([...direct].sort())
    }),
  )
  t.same(
    Object.fromEntries(countersDelta(null, { status: 'OPEN', deleted: false, assignedAgentId: 'a', channelId: 'ch1', unreadCount: 3 })),
    { all: { conversations: 1, messages: 3 }, 'agent:a': { conversations: 1, messages: 3 }, 'channel:ch1': { conversations: 1, messages: 3 } },
  )
  t.same(
    Object.fromEntries(countersDelta(
      { status: 'OPEN', deleted: false, assignedAgentId: 'a', channelId: 'ch1', unreadCount: 3 },
      { status: 'OPEN', deleted: false, assignedAgentId: null, channelId: 'ch2', unreadCount: 3 },
    )),
    {
      'agent:a': { conversations: -1, messages: -3 }, unassigned: { conversations: 1, messages: 3 },
      'channel:ch1': { conversations: -1, messages: -3 }, 'channel:ch2': { conversations: 1, messages: 3 },
    },
    'an assignment and a channel change move the conversation between scopes; "all" stays',
  )
})

t.test('unread-count follows every operation', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const ws2 = await seedWorkspace(app, 'Other')
  const ch2 = await addChannel(app, ws)
  const guest = await seedGuest(app, ws)
  const g2 = await seedGuest(app, ws)
  await app.deps.sql`UPDATE guests SET channel_id = ${ch2} WHERE id = ${g2.guestId}`
  const g2session = app.deps.visitorTokens.sign({ guestId: g2.guestId, channelId: ch2, workspaceId: ws.workspaceId }).token
  const g2headers = { 'x-visitor-session': g2session }
  const zero = { total: 0, mine: 0, unassigned: 0, messages: 0, byChannel: {}, byTeam: {} }

  const a = await startConversation(app, guest)

  await t.test("a guest's messages make the conversation unread, an agent's do not", async (t) => {
    t.same(await unreadCount(app, ws), zero, 'a new conversation is not unread')
    await send(app, guest.headers, a.id, 'one')
    await send(app, guest.headers, a.id, 'two')
    t.same(await unreadCount(app, ws), { total: 1, mine: 0, unassigned: 1, messages: 2, byChannel: { [ws.channelId]: 1 }, byTeam: {} })
    await send(app, ws.agent.headers, a.id, 'reply')
    t.same((await unreadCount(app, ws)).messages, 2, 'agent messages are not unread')
  })

  const bRes = await app.inject({ method: 'POST', url: '/conversations', headers: g2headers, payload: { channelId: ch2, guestId: g2.guestId } })
  const b = bRes.json()

  await t.test('a conversation on another channel counts in its own byChannel entry', async (t) => {
    await send(app, g2headers, b.id, 'other channel')
    t.same(await unreadCount(app, ws), { total: 2, mine: 0, unassigned: 2, messages: 3, byChannel: { [ws.channelId]: 1, [ch2]: 1 }, byTeam: {} })
  })

  await t.test('assign, reassign and unassign move it between mine and unassigned', async (t) => {
    await patch(app, ws.admin.headers, a.id, 'assign-agent', { agentId: ws.agent.userId })
    t.same(await unreadCount(app, ws), { total: 2, mine: 1, unassigned: 1, messages: 3, byChannel: { [ws.channelId]: 1, [ch2]: 1 }, byTeam: {} }, 'assign: mine for the agent')
    t.equal((await unreadCount(app, ws, ws.admin)).mine, 0, 'not mine for another member')
    await patch(app, ws.admin.headers, a.id, 'assign-agent', { agentId: ws.admin.userId })
    t.equal((await unreadCount(app, ws, ws.admin)).mine, 1, 'reassign moves it')
    t.equal((await unreadCount(app, ws)).mine, 0)
    await patch(app, ws.admin.headers, a.id, 'unassign-agent')
    t.same(await unreadCount(app, ws, ws.admin), { total: 2, mine: 0, unassigned: 2, messages: 3, byChannel: { [ws.channelId]: 1, [ch2]: 1 }, byTeam: {} }, 'unassign')
  })

  await t.test('close leaves the counts, reopen and a guest message bring it back', async (t) => {
    await patch(app, ws.agent.headers, a.id, 'close')
    t.same(await unreadCount(app, ws), { total: 1, mine: 0, unassigned: 1, messages: 1, byChannel: { [ch2]: 1 }, byTeam: {} }, 'close leaves the counts')
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${a.id}`, headers: ws.agent.headers })).json().unreadCount, 2, 'but keeps its unreadCount')
    await patch(app, ws.agent.headers, a.id, 'reopen')
    t.same(await unreadCount(app, ws), { total: 2, mine: 0, unassigned: 2, messages: 3, byChannel: { [ws.channelId]: 1, [ch2]: 1 }, byTeam: {} }, 'reopen brings it back')
    await patch(app, ws.agent.headers, a.id, 'close')
    await send(app, guest.headers, a.id, 'three')
    t.same(await unreadCount(app, ws), { total: 2, mine: 0, unassigned: 2, messages: 4, byChannel: { [ws.channelId]: 1, [ch2]: 1 }, byTeam: {} }, 'a guest message reopens and counts')
  })

  await t.test("a member's mark-seen clears it, a visitor's does not; pin changes nothing; delete clears it", async (t) => {
    await patch(app, ws.agent.headers, a.id, 'mark-seen')
    t.same(await unreadCount(app, ws), { total: 1, mine: 0, unassigned: 1, messages: 1, byChannel: { [ch2]: 1 }, byTeam: {} }, 'mark seen')
    await patch(app, g2headers, b.id, 'mark-seen')
    t.equal((await unreadCount(app, ws)).total, 1, 'a visitor mark-seen does not touch the agents counts')

    await patch(app, ws.agent.headers, b.id, 'pin')
    t.equal((await unreadCount(app, ws)).total, 1, 'pin changes no count')
    await app.inject({ method: 'DELETE', url: `/conversations/${b.id}`, headers: ws.owner.headers })
    t.same(await unreadCount(app, ws), zero, 'delete')
    t.same(await unreadCount(app, ws2, ws2.agent), zero, 'another workspace sees none of it')
  })

  await t.test('reconcile finds nothing to correct; writers spread over slot rows; not for visitors', async (t) => {
    const rec = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })
    t.equal(rec.statusCode, 200)
    t.match(rec.json(), { corrected: false, conversationsFixed: 0 })
    t.same(rec.json().before, rec.json().after)

    const slots = await app.deps.sql`SELECT count(DISTINCT slot)::int AS n FROM unread_counters WHERE workspace_id = ${ws.workspaceId}`
    t.ok(slots[0].n > 1, 'writers spread over slot rows')

    t.equal((await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: guest.headers })).statusCode, 401, 'not for visitors')
    t.equal((await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: guest.headers })).statusCode, 401)
  })
})

t.test('reconcile repairs drifted counters and unread counts', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const og = await seedGuest(app, other)
  const a = await startConversation(app, guest)
  const b = await startConversation(app, guest)
  const o = await startConversation(app, og)
  await send(app, guest.headers, a.id, 'one')
  await send(app, guest.headers, a.id, 'two')
  await send(app, guest.headers, b.id, 'three')
  await send(app, og.headers, o.id, 'elsewhere')
  await patch(app, ws.admin.headers, b.id, 'assign-agent', { agentId: ws.agent.userId })
  const good = await unreadCount(app, ws)
  t.same(good, { total: 2, mine: 1, unassigned: 1, messages: 3, byChannel: { [ws.channelId]: 2 }, byTeam: {} })

  // Drift on purpose: a counter row and a conversation's own unread_count.
  await app.deps.sql`UPDATE unread_counters SET conversations = conversations + 5, messages = messages + 7 WHERE workspace_id = ${ws.workspaceId} AND scope = 'all'
                  AND slot = (SELECT min(slot) FROM unread_counters WHERE workspace_id = ${ws.workspaceId} AND scope = 'all')`
  await app.deps.sql`UPDATE conversations SET unread_count = 9 WHERE id = ${b.id}`
  await app.deps.sql`INSERT INTO unread_counters (workspace_id, scope, slot, conversations, messages) VALUES (${ws.workspaceId}, 'agent:ghost', 2, 1, 1)`
  t.equal((await unreadCount(app, ws)).total, 7)

  const rec = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })
  t.equal(rec.statusCode, 200)
  const r = rec.json()
  t.equal(r.corrected, true)
  t.equal(r.conversationsFixed, 1)
  t.match(r.before, { total: 7, messages: 10, byAgent: { ghost: { conversations: 1, messages: 1 } } })
  t.same(r.after, {
    total: 2, unassigned: 1, messages: 3,
    byAgent: { [ws.agent.userId]: { conversations: 1, messages: 1 } },
    byChannel: { [ws.channelId]: { conversations: 2, messages: 3 } },
  })
  t.same(await unreadCount(app, ws), good, 'the counts are right again')
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${b.id}`, headers: ws.agent.headers })).json().unreadCount, 1)
  const again = (await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })).json()
  t.equal(again.corrected, false)
  t.same(await unreadCount(app, other, other.agent), { total: 1, mine: 0, unassigned: 1, messages: 1, byChannel: { [other.channelId]: 1 }, byTeam: {} }, 'another workspace untouched')
  const brute = await bruteForceCounts(app, ws.workspaceId, ws.agent.userId)
  t.same(await unreadCount(app, ws), brute.counts)

  // The read is an index range on the counters' primary key, whatever the workspace's size.
  const plan = await app.deps.sql.begin(async (sql) => {
    await sql`SET LOCAL enable_seqscan = off`
    return sql.unsafe(`EXPLAIN SELECT scope, sum(conversations), sum(messages) FROM unread_counters
      WHERE workspace_id = '${ws.workspaceId}' AND (scope IN ('all', 'unassigned', 'agent:x') OR scope LIKE 'channel:%') GROUP BY scope`)
  })
  t.match(JSON.stringify(plan), /unread_counters_workspace_id_scope_slot_pk/)
})

t.test('reconcile takes no workspace lock: it waits only for the row it must fix, and holds no writer', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  const d = await startConversation(app, guest)
  await send(app, guest.headers, c.id, 'one')
  const { lockCountersShared } = await import('../../src/conversations/counters.js')
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  const reconcile = () => app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })

  // A writer in flight on c, as every writer holds it: the workspace lock shared, c's row locked.
  const holdRow = async (id: string) => {
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    let locked!: () => void
    const isLocked = new Promise<void>((r) => (locked = r))
    const tx = app.deps.sql.begin(async (sql) => {
      await lockCountersShared(sql as never, ws.workspaceId)
      await sql`SELECT 1 FROM conversations WHERE id = ${id} FOR UPDATE`
      locked()
      await held
    })
    await isLocked
    return async () => {
      release()
      await tx
    }
  }

  // Nothing to fix: a reconcile does not wait for the writer in flight.
  let release = await holdRow(c.id)
  const quiet = await reconcile()
  t.equal(quiet.json().corrected, false, 'done while a writer holds the workspace lock and a row')
  await release()

  // c drifted and held by a writer: the reconcile waits for that row alone (to recount it under
  // the lock); writers of other conversations go on meanwhile.
  await app.deps.sql`UPDATE conversations SET unread_count = 4 WHERE id = ${c.id}`
  release = await holdRow(c.id)
  let reconciled = false
  const rec = reconcile().then((r) => ((reconciled = true), r))
  await sleep(200)
  t.equal(reconciled, false, 'reconcile waits for the row it must fix')
  const msg = await send(app, guest.headers, d.id, 'meanwhile')
  t.equal(msg.statusCode, 201, 'a writer of another conversation is not held')
  t.equal(reconciled, false)
  await release()
  const r = (await rec).json()
  t.equal(r.corrected, true)
  t.equal(r.conversationsFixed, 1)
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json().unreadCount, 1)
  t.same(await unreadCount(app, ws), { total: 2, mine: 0, unassigned: 2, messages: 2, byChannel: { [ws.channelId]: 2 }, byTeam: {} })
  t.equal((await reconcile()).json().corrected, false)
})

t.test('reconcile is rate limited per workspace (RECONCILE_PER_MIN) and needs conversations:reconcile', async (t) => {
  const { app } = await build(t, { env: { RECONCILE_PER_MIN: '4' } })
  const ws = await seedWorkspace(app)
  const ws2 = await seedWorkspace(app, 'Other')
  const limit = 4
  const strangers = await Promise.all(Array.from({ length: limit + 1 }, () =>
    app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: { ...ws2.admin.headers, 'x-workspace-id': ws.workspaceId } })))
  t.ok(strangers.every((r) => r.statusCode === 403), 'non-members are refused and use up nothing')
  const agents = await Promise.all(Array.from({ length: limit + 1 }, () =>
    app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.agent.headers })))
  t.ok(agents.every((r) => r.statusCode === 403 && r.json().code === 'FORBIDDEN'), 'an agent may not reconcile, and uses up nothing')
  for (let i = 0; i < limit; i++) {
    const r = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: (i % 2 ? ws.owner : ws.admin).headers })
    if (r.statusCode !== 200) t.fail(`call ${i}: ${r.statusCode}`)
  }
  const over = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })
  t.equal(over.statusCode, 429)
  t.equal(over.json().code, 'RATE_LIMITED')
  t.ok(Number(over.headers['retry-after']) > 0)
  t.equal((await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws2.admin.headers })).statusCode, 200, 'other workspaces have their own allowance')
  t.equal((await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: ws.owner.headers })).statusCode, 200, 'unread-count is not limited')
})
