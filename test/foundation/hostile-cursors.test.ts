import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'
import { insertConversations, insertMessage } from '../conversations/seed.js'
import { PDF, uploadForm } from '../attachments/fixtures.js'
import { eventA, nowS, postA, providerAEnv } from '../billing/fixtures.js'

/**
 * Every keyset list answers the same hostile cursors the same way (src/cursor.ts keysetPage):
 * 400 INVALID_CURSOR, never a 500 or a page. Each list is one subtest, each hostile cursor one
 * case, so a failure names both.
 */
const { app } = await build(t, { env: { ...providerAEnv, JOBS_WORKER: 'false' } })
const ws = await seedWorkspace(app, 'Acme')
const other = await seedWorkspace(app, 'Other')
const gina = await seedGuest(app, ws, 'Gina Cursor')
const gino = await seedGuest(app, ws, 'Gina Cursorette')
const [convA, convB] = [await startConversation(app, gina), await startConversation(app, gina)]
await startConversation(app, gino)
for (const conv of [convA, convB]) {
  await insertMessage(app, { ...conv, workspaceId: ws.workspaceId, guestId: gina.guestId }, 'first')
  await insertMessage(app, { ...conv, workspaceId: ws.workspaceId, guestId: gina.guestId }, 'second')
}
// Two files on one message (the files tab).
const uploaded: string[] = []
for (const name of ['a.pdf', 'b.pdf']) {
  const form = uploadForm(convA.id, { filename: name, contentType: 'application/pdf', data: PDF })
  const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...ws.agent.headers, ...form.headers }, payload: form.payload })
  if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`)
  uploaded.push(res.json().id)
}
const send = (payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: `/conversations/${convA.id}/messages`, headers: ws.agent.headers, payload })
for (const payload of [{ body: 'files', attachmentIds: uploaded }, { body: 'one', private: true, mentions: [ws.admin.userId] }, { body: 'two', private: true, mentions: [ws.admin.userId] }]) {
  const res = await send(payload)
  if (res.statusCode !== 201) throw new Error(`send: ${res.statusCode} ${res.body}`)
}
await insertConversations(app, ws, [
  { status: 'OPEN', assignedAgentId: ws.agent.userId },
  { status: 'OPEN', assignedAgentId: ws.agent.userId },
  { status: 'RESOLVED' },
  { status: 'RESOLVED', closedAt: null },
])
for (const shortcut of ['hello', 'help']) {
  const res = await app.inject({ method: 'POST', url: '/canned-responses', headers: ws.admin.headers, payload: { shortcut, title: shortcut, body: `${shortcut} there`, scope: 'workspace' } })
  if (res.statusCode !== 201) throw new Error(`canned: ${res.statusCode} ${res.body}`)
}
// Section 17: two saved views (the second a cursor's "other params").
const views: string[] = []
for (const filters of [{ status: 'active' }, { status: 'active', assignee: 'me' }]) {
  const res = await app.inject({ method: 'POST', url: '/views', headers: ws.agent.headers, payload: { name: `v${views.length}`, filters } })
  if (res.statusCode !== 201) throw new Error(`view: ${res.statusCode} ${res.body}`)
  views.push(res.json().id)
}
for (const [i, at] of [nowS() - 100, nowS() - 50].entries()) {
  const res = await postA(app, eventA('invoice.paid', { id: `in_cursor_${i}`, amount_paid: 100, currency: 'gbp', metadata: { workspaceId: ws.workspaceId } }, { created: at }))
  if (res.statusCode !== 200) throw new Error(`payment: ${res.statusCode} ${res.body}`)
}

interface List {
  name: string
  /** The list's first page URL (limit=1), without a cursor. */
  url: string
  headers: Record<string, string>
  /** The same list with other parameters (sort, filter, scope): the cursor is bound to the first. */
  otherParams: { url: string; headers?: Record<string, string> }
}

const lists: List[] = [
  { name: 'GET /conversations', url: '/conversations?limit=1', headers: ws.agent.headers, otherParams: { url: '/conversations?limit=1&sortBy=createdAt' } },
  { name: 'GET /conversations/Myconversation', url: '/conversations/Myconversation?limit=1', headers: ws.agent.headers, otherParams: { url: '/conversations/Myconversation?limit=1&sortOrder=asc' } },
  { name: 'GET /conversations/closed', url: '/conversations/closed?limit=1', headers: ws.agent.headers, otherParams: { url: '/conversations/closed?limit=1&sortBy=createdAt' } },
  {
    name: 'GET /conversations/guest/:guestId/history',
    url: `/conversations/guest/${gina.guestId}/history?limit=1`,
    headers: ws.agent.headers,
    otherParams: { url: `/conversations/guest/${gino.guestId}/history?limit=1` },
  },
  { name: 'GET /conversations/:id/messages', url: `/conversations/${convA.id}/messages?limit=1`, headers: ws.agent.headers, otherParams: { url: `/conversations/${convB.id}/messages?limit=1` } },
  {
    name: 'GET /conversations/:id/attachments',
    url: `/conversations/${convA.id}/attachments?limit=1`,
    headers: ws.agent.headers,
    otherParams: { url: `/conversations/${convB.id}/attachments?limit=1` },
  },
  { name: 'GET /mentions', url: '/mentions?limit=1', headers: ws.admin.headers, otherParams: { url: '/mentions?limit=1&unread=true' } },
  { name: 'GET /visitors', url: '/visitors?limit=1', headers: ws.agent.headers, otherParams: { url: '/visitors?limit=1&q=gina' } },
  { name: 'GET /canned-responses', url: '/canned-responses?limit=1', headers: ws.agent.headers, otherParams: { url: '/canned-responses?limit=1&scope=workspace' } },
  { name: 'GET /canned-responses?q (the picker)', url: '/canned-responses?limit=1&q=hel', headers: ws.agent.headers, otherParams: { url: '/canned-responses?limit=1&q=he' } },
  { name: 'GET /billing/payments', url: '/billing/payments?limit=1', headers: ws.owner.headers, otherParams: { url: '/billing/payments?limit=1', headers: other.owner.headers } },
  {
    name: 'GET /conversations?sortBy=priority',
    url: '/conversations?limit=1&sortBy=priority',
    headers: ws.agent.headers,
    otherParams: { url: '/conversations?limit=1&sortBy=priority&priority=none' },
  },
  { name: 'GET /views/:id/conversations', url: `/views/${views[0]}/conversations?limit=1`, headers: ws.agent.headers, otherParams: { url: `/views/${views[1]}/conversations?limit=1` } },
  { name: 'GET /conversations/search', url: '/conversations/search?limit=1&q=Gina', headers: ws.agent.headers, otherParams: { url: '/conversations/search?limit=1&q=Cursor' } },
]

const withCursor = (url: string, cursor: string) => `${url}&cursor=${encodeURIComponent(cursor)}`

async function firstCursor(list: List): Promise<string> {
  const res = await app.inject({ method: 'GET', url: list.url, headers: list.headers })
  if (res.statusCode !== 200) throw new Error(`${list.name}: ${res.statusCode} ${res.body}`)
  const cursor = res.json().nextCursor
  if (typeof cursor !== 'string') throw new Error(`${list.name}: the fixture gives no second page`)
  return cursor
}

const cursors = new Map<string, string>()
for (const list of lists) cursors.set(list.name, await firstCursor(list))

for (const [i, list] of lists.entries()) {
  t.test(list.name, async (t) => {
    const good = cursors.get(list.name)!
    const another = cursors.get(lists[(i + 1) % lists.length]!.name)!
    const [payload, tag] = good.split('.') as [string, string]
    const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1)
    // Signed with the app's own key, bound to this list's params, but a key no page of it writes.
    const { p, k } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { p: Record<string, string>; k: string[] }
    const wrongShape = app.deps.cursor.encode(p, k.map(() => 'x'))
    const shorter = app.deps.cursor.encode(p, k.slice(1))

    // The genuine cursor works: what follows is refused for what it is, not for the fixture.
    const ok = await app.inject({ method: 'GET', url: withCursor(list.url, good), headers: list.headers })
    t.equal(ok.statusCode, 200, 'the genuine cursor reads the second page')

    const cases: [string, string, { url: string; headers?: Record<string, string> }?][] = [
      ['tampered payload', `${flip(payload, 5)}.${tag}`],
      ['tampered tag', `${payload}.${flip(tag, 3)}`],
      ['no tag', payload],
      ['another list\'s cursor', another],
      ['other sort / filter / scope params', good, list.otherParams],
      ['garbage base64', 'bm90IGEgY3Vyc29y.Z2FyYmFnZQ'],
      ['not base64 at all', '!!!.???'],
      ['signed, wrong key types', wrongShape],
      ['signed, key too short', shorter],
    ]
    for (const [name, cursor, target] of cases) {
      t.test(name, async (t) => {
        const res = await app.inject({ method: 'GET', url: withCursor(target?.url ?? list.url, cursor), headers: target?.headers ?? list.headers })
        t.equal(res.statusCode, 400)
        t.match(res.json(), { statusCode: 400, error: 'Bad Request', code: 'INVALID_CURSOR' })
      })
    }
  })
}
