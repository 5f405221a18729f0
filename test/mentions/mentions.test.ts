import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'
import { fast, startSmtp, waitFor } from '../transcripts/smtp.js'

const smtp = await startSmtp()
t.teardown(smtp.close)
const { app, redisPrefix } = await build(t, {
  env: { ...fast, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MENTION_EMAIL: 'true', APP_URL: 'https://app.parley.test' },
})
const ws = await seedWorkspace(app, 'Acme')
const other = await seedWorkspace(app, 'Other')
const sql = app.deps.sql
const events = await listenEvents(t, redisPrefix)

const note = (id: string, body: string, mentions: string[], headers = ws.agent.headers, clientMessageId?: string) =>
  app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers, payload: { body, private: true, mentions, clientMessageId } })
const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url, headers })
const count = async (headers: Record<string, string>) => (await get('/mentions/unread-count', headers)).json().count

t.test('a note with mentions: one row per member, the author never, a member named twice once, in the same transaction', async (t) => {
  const conv = await startConversation(app, await seedGuest(app, ws))
  const disabled = await ws.addMember('agent', 'Dora Disabled')
  await sql`UPDATE members SET status = 'disabled' WHERE user_id = ${disabled.userId}`
  for (const bad of [[other.owner.userId], ['nobody'], [ws.admin.userId, disabled.userId]]) {
    const res = await note(conv.id, 'x', bad)
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'INVALID_MENTION')
  }
  const [{ n }] = await sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${conv.id}`
  t.equal(n, 0, 'a refused note leaves no message and no mention')

  events.clear()
  const res = await note(conv.id, 'Can you   look at\nthis refund?', [ws.admin.userId, ws.owner.userId, ws.admin.userId, ws.agent.userId], ws.agent.headers, 'n-1')
  t.equal(res.statusCode, 201)
  const rows = await sql`SELECT user_id, by_user_id, excerpt, message_id FROM mentions WHERE conversation_id = ${conv.id} ORDER BY user_id`
  t.same(rows.map((r) => r.user_id).sort(), [ws.admin.userId, ws.owner.userId].sort())
  t.ok(rows.every((r) => r.by_user_id === ws.agent.userId && r.message_id === res.json().id && r.excerpt === 'Can you look at this refund?'))
  const retry = await note(conv.id, 'Can you   look at\nthis refund?', [ws.admin.userId, ws.owner.userId], ws.agent.headers, 'n-1')
  t.equal(retry.statusCode, 200, 'a retried note returns the first')
  const [{ m }] = await sql`SELECT count(*)::int AS m FROM mentions WHERE conversation_id = ${conv.id}`
  t.equal(m, 2, 'and mentions nobody twice')

  const e = await events.waitFor((x) => x.event === 'mention:new' && x.rooms[0] === `member:${ws.workspaceId}:${ws.admin.userId}`)
  t.same(e.rooms, [`member:${ws.workspaceId}:${ws.admin.userId}`], "mention:new goes to the member's own room only")
  t.match(e.payload.mention, { conversationId: conv.id, messageId: res.json().id, byUserId: ws.agent.userId, byName: 'Agnes Agent', readAt: null })
  await events.settle()
  t.equal(events.events.filter((x) => x.event === 'mention:new').length, 2, 'one event per mentioned member')
  t.notOk(events.events.some((x) => x.event === 'mention:new' && x.rooms.some((r) => r.includes(ws.agent.userId))), 'none for the author')

  // E-mail: the mentioned members, never the author.
  await waitFor(() => smtp.mails.length >= 2)
  await new Promise((r) => setTimeout(r, 500))
  const to = smtp.mails.flatMap((mail) => mail.envelopeTo).sort()
  t.same(to, [ws.admin.email, ws.owner.email].sort())
  const mail = smtp.mails[0]!
  t.match(mail.subject, /Agnes Agent mentioned you/)
  t.match(mail.text, /Can you look at this refund\?/)
  t.ok(String(mail.text).includes(`https://app.parley.test/conversations/${conv.id}`), 'a link under APP_URL')
  const [{ mailed }] = await sql`SELECT count(*)::int AS mailed FROM mentions WHERE conversation_id = ${conv.id} AND mailed_at IS NOT NULL`
  t.equal(mailed, 2)
})

t.test('list, unread count, read, read-all', async (t) => {
  const w = await seedWorkspace(app, 'Lists')
  const conv = await startConversation(app, await seedGuest(app, w))
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const res = await note(conv.id, `note ${i}`, [w.admin.userId], w.agent.headers)
    t.equal(res.statusCode, 201)
  }
  t.equal(await count(w.admin.headers), 5)
  t.equal(await count(w.agent.headers), 0)
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const page: { data: { excerpt: string; id: string }[]; nextCursor: string | null } = (await get(`/mentions?limit=2${cursor ? `&cursor=${cursor}` : ''}`, w.admin.headers)).json()
    seen.push(...page.data.map((x: { excerpt: string }) => x.excerpt))
    ids.push(...page.data.map((x: { id: string }) => x.id))
    cursor = page.nextCursor
  } while (cursor)
  t.same(seen, ['note 4', 'note 3', 'note 2', 'note 1', 'note 0'], 'newest first, each once')

  const notMine = await app.inject({ method: 'PATCH', url: `/mentions/${ids[0]}/read`, headers: w.agent.headers })
  t.equal(notMine.statusCode, 404)
  t.equal(notMine.json().code, 'MENTION_NOT_FOUND')
  t.equal((await app.inject({ method: 'PATCH', url: `/mentions/${ids[0]}/read`, headers: other.owner.headers })).statusCode, 404)
  t.equal((await app.inject({ method: 'PATCH', url: '/mentions/nope/read', headers: w.admin.headers })).statusCode, 404)
  const read = await app.inject({ method: 'PATCH', url: `/mentions/${ids[0]}/read`, headers: w.admin.headers })
  t.equal(read.statusCode, 200)
  t.ok(read.json().readAt)
  const again = await app.inject({ method: 'PATCH', url: `/mentions/${ids[0]}/read`, headers: w.admin.headers })
  t.equal(again.json().readAt, read.json().readAt, 'reading again changes nothing')
  t.equal(await count(w.admin.headers), 4)
  t.same((await get('/mentions?unread=false', w.admin.headers)).json().data.map((x: { id: string }) => x.id), [ids[0]])
  t.equal((await get('/mentions?unread=true', w.admin.headers)).json().data.length, 4)

  const [a, b] = await Promise.all([1, 2].map(() => app.inject({ method: 'POST', url: '/mentions/read-all', headers: w.admin.headers })))
  t.equal(a!.json().updated + b!.json().updated, 4, 'concurrent read-alls count each mention once')
  t.equal(await count(w.admin.headers), 0)
  t.equal((await get('/mentions?unread=true', w.admin.headers)).json().data.length, 0)
})

t.test('mentions of a deleted conversation leave the lists and the count', async (t) => {
  const w = await seedWorkspace(app, 'Deletes')
  const keep = await startConversation(app, await seedGuest(app, w))
  const gone = await startConversation(app, await seedGuest(app, w))
  await note(keep.id, 'keep me', [w.agent.userId], w.owner.headers)
  const doomed = await note(gone.id, 'delete me', [w.agent.userId], w.owner.headers)
  await note(gone.id, 'read one', [w.agent.userId], w.owner.headers)
  const list = (await get('/mentions', w.agent.headers)).json().data
  const readId = list.find((x: { excerpt: string }) => x.excerpt === 'read one').id
  await app.inject({ method: 'PATCH', url: `/mentions/${readId}/read`, headers: w.agent.headers })
  t.equal(await count(w.agent.headers), 2)
  const goneId = list.find((x: { messageId: string }) => x.messageId === doomed.json().id).id
  t.equal((await app.inject({ method: 'DELETE', url: `/conversations/${gone.id}`, headers: w.owner.headers })).statusCode, 204)
  t.equal(await count(w.agent.headers), 1)
  t.same((await get('/mentions', w.agent.headers)).json().data.map((x: { excerpt: string }) => x.excerpt), ['keep me'])
  t.equal((await app.inject({ method: 'PATCH', url: `/mentions/${goneId}/read`, headers: w.agent.headers })).statusCode, 404)
})

t.test('hostile input on /mentions', async (t) => {
  t.equal((await get('/mentions?unread=maybe', ws.admin.headers)).statusCode, 400)
  t.equal((await get('/mentions?cursor=x.y', ws.admin.headers)).json().code, 'INVALID_CURSOR')
  t.equal((await get('/mentions?limit=0', ws.admin.headers)).statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: '/mentions/read-all', headers: ws.admin.headers, payload: { all: true } })).statusCode, 400)
  const guest = await seedGuest(app, ws)
  t.equal((await get('/mentions', guest.headers)).statusCode, 401, 'visitors have no mentions')
})
