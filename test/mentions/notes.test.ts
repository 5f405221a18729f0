// Private notes (API.md section 12): one test per path a visitor can reach, through HTTP and the
// events the API publishes for the gateway (test/mentions/gateway.test.ts has the real sockets).
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, send, startConversation, unreadCount } from '../conversations/fixtures.js'
import { fast, startSmtp, waitFor } from '../transcripts/smtp.js'

const smtp = await startSmtp()
t.teardown(smtp.close)
const { app, redisPrefix } = await build(t, { env: { ...fast, SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } })
const ws = await seedWorkspace(app, 'Acme')
const sql = app.deps.sql
const events = await listenEvents(t, redisPrefix)

const note = (id: string, body: string, extra: Record<string, unknown> = {}, headers = ws.agent.headers) =>
  app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers, payload: { body, private: true, ...extra } })

async function setup(email = 'gina@example.test') {
  const guest = await seedGuest(app, ws, 'Gina', email)
  const conv = await startConversation(app, guest)
  t.equal((await send(app, guest.headers, conv.id, 'Where is my parcel?')).statusCode, 201)
  t.equal((await send(app, ws.agent.headers, conv.id, 'Checking now')).statusCode, 201)
  return { guest, conv }
}

t.test('who may send a note: members only; mentions only with private: true', async (t) => {
  const { guest, conv } = await setup()
  for (const payload of [{ body: 'x', private: true }, { body: 'x', private: false }, { body: 'x', mentions: [] }]) {
    const res = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers: guest.headers, payload })
    t.equal(res.statusCode, 400, `visitor sending ${JSON.stringify(payload)}`)
  }
  const res = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers: ws.agent.headers, payload: { body: 'x', mentions: [ws.admin.userId] } })
  t.equal(res.statusCode, 400)
  const tooMany = await note(conv.id, 'x', { mentions: Array.from({ length: 21 }, (_, i) => `u${i}`) })
  t.equal(tooMany.statusCode, 400)
  const [{ n }] = await sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${conv.id}`
  t.equal(n, 2, 'nothing stored')
})

t.test('message list: the visitor never sees a note, members see it marked private', async (t) => {
  const { guest, conv } = await setup()
  const res = await note(conv.id, 'Internal: customer is a VIP')
  t.equal(res.statusCode, 201)
  t.match(res.json(), { private: true, senderType: 'AGENT' })
  const asVisitor = await app.inject({ method: 'GET', url: `/conversations/${conv.id}/messages?limit=1`, headers: guest.headers })
  const pages: string[] = []
  let body = asVisitor.json()
  pages.push(...body.data.map((m: { body: string }) => m.body))
  while (body.nextCursor) {
    body = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}/messages?limit=1&cursor=${body.nextCursor}`, headers: guest.headers })).json()
    pages.push(...body.data.map((m: { body: string }) => m.body))
  }
  t.same(pages, ['Where is my parcel?', 'Checking now'], 'paging as a visitor: no note')
  const asMember = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}/messages`, headers: ws.owner.headers })).json()
  t.same(asMember.data.map((m: { private: boolean }) => m.private), [false, false, true])
})

t.test('message:new fan-out: a note goes to the members room only', async (t) => {
  const { guest, conv } = await setup()
  events.clear()
  const res = await note(conv.id, 'Members only, please')
  const e = await events.waitFor((x) => x.event === 'message:new' && x.payload.message.id === res.json().id)
  t.same(e.rooms, [`ws:${ws.workspaceId}`])
  t.notOk(e.rooms.includes(`guest:${guest.guestId}`))
  await events.settle()
  t.same(events.events.filter((x) => x.event === 'conversation:updated'), [], 'no conversation:updated either')
})

t.test('preview, lastMessageAt, updatedAt, unread counters and public routes do not move', async (t) => {
  const { guest, conv } = await setup()
  const before = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: guest.headers })).json()
  const meta = (await app.inject({ method: 'GET', url: `/api/public/conversations/${conv.id}/meta` })).json()
  const unread = await unreadCount(app, ws)
  t.equal((await note(conv.id, 'SECRET NOTE TEXT')).statusCode, 201)
  const after = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: guest.headers })).json()
  t.same(after, before, "the visitor's conversation object is exactly as before")
  t.equal(after.lastMessagePreview, 'Checking now')
  const member = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: ws.agent.headers })).json()
  t.equal(member.lastMessagePreview, 'Checking now', "members' preview neither")
  t.same((await app.inject({ method: 'GET', url: `/api/public/conversations/${conv.id}/meta` })).json(), meta)
  for (const path of ['status', 'agent', 'meta']) {
    const res = await app.inject({ method: 'GET', url: `/api/public/conversations/${conv.id}/${path}` })
    t.notOk(res.body.includes('SECRET'), `public ${path}`)
  }
  t.same(await unreadCount(app, ws), unread, 'unread counters unchanged')
  const reconcile = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })
  t.equal(reconcile.json().corrected, false)
})

t.test('transcripts: a visitor download has no note, a member download marks it, an e-mail never has it', async (t) => {
  const { guest, conv } = await setup()
  t.equal((await note(conv.id, 'SECRET NOTE TEXT')).statusCode, 201)
  for (const format of ['txt', 'json', 'html']) {
    const v = await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download?format=${format}`, headers: guest.headers })
    t.equal(v.statusCode, 200)
    t.notOk(v.body.includes('SECRET'), `visitor ${format}`)
    t.ok(v.body.includes('Checking now'))
    const m = await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download?format=${format}`, headers: ws.agent.headers })
    t.ok(m.body.includes('SECRET NOTE TEXT'), `member ${format} includes the note`)
  }
  const txt = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download`, headers: ws.agent.headers })).body
  t.match(txt, /\(agent, internal note\): SECRET NOTE TEXT/)
  const html = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download?format=html`, headers: ws.agent.headers })).body
  t.match(html, /class="agent note".*Internal note/)

  for (const headers of [ws.owner.headers, guest.headers]) {
    const res = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/transcript`, headers, payload: {} })
    t.equal(res.statusCode, 200)
  }
  await waitFor(() => smtp.mails.filter((m) => m.headers.get('x-parley-conversation') === conv.id).length === 2)
  for (const mail of smtp.mails.filter((m) => m.headers.get('x-parley-conversation') === conv.id)) {
    t.ok(String(mail.text).includes('Checking now'))
    t.notOk(String(mail.text).includes('SECRET') || String(mail.html).includes('SECRET'), 'transcript e-mail without the note, whoever asked')
  }
})
