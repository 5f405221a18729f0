import t from 'tap'
import { build, seedWorkspace } from '../helper.js'

t.test('POST /auth without e-mail: the guest has none, and null is right everywhere it appears', async (t) => {
  const { app } = await build(t, { env: { JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(app)
  const boot = (payload: object, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: '/auth', headers, payload })

  const res = await boot({ channelId: ws.channelId, name: 'Anon Ymous' })
  const { guestId, visitorSession } = res.json()
  const headers = { 'x-visitor-session': visitorSession }

  await t.test('stored as null; a resume without an address keeps the guest', async (t) => {
    t.equal(res.statusCode, 201)
    const [row] = await app.deps.sql<{ email: string | null }[]>`SELECT email FROM guests WHERE id = ${guestId}`
    t.equal(row.email, null, 'stored as null, not an empty string')

    const resumed = await boot({ channelId: ws.channelId, name: 'Anon Again' }, headers)
    t.same([resumed.statusCode, resumed.json().guestId], [200, guestId], 'resumed without an address')
  })

  const conv = (await app.inject({ method: 'POST', url: '/conversations', headers, payload: { channelId: ws.channelId, guestId } })).json()
  await app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers, payload: { body: 'Hello without an address' } })

  await t.test('null in every view: conversation, list, search, visitors', async (t) => {
    t.equal(conv.guest.email, null, 'conversation view (visitor)')
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: ws.agent.headers })).json().guest.email, null, 'conversation view (member)')
    const list = (await app.inject({ method: 'GET', url: '/conversations', headers: ws.agent.headers })).json()
    t.equal(list.data[0].guest.email, null, 'conversation list')
    const search = await app.inject({ method: 'GET', url: '/conversations/search?q=Anon', headers: ws.agent.headers })
    t.equal(search.statusCode, 200)
    t.match(search.json().data, [{ id: conv.id, guest: { email: null } }], 'search by name finds a guest without an address')
    t.equal((await app.inject({ method: 'GET', url: '/conversations/search?q=address', headers: ws.agent.headers })).json().data[0].guest.email, null)
    t.match((await app.inject({ method: 'GET', url: '/visitors', headers: ws.agent.headers })).json().data, [{ id: guestId, email: null }], 'visitor list')
    t.equal((await app.inject({ method: 'GET', url: `/visitors/${guestId}`, headers: ws.agent.headers })).json().email, null, 'visitor profile')
  })

  await t.test('transcripts (txt, json, html) name the guest without "<null>" or "<>"', async (t) => {
    const txt = await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download`, headers: ws.agent.headers })
    t.equal(txt.statusCode, 200)
    t.match(txt.body, /Guest: Anon Again\n/, 'transcript names the guest without "<null>" or "<>"')
    t.notMatch(txt.body, /null|<>/)
    const json = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download?format=json`, headers })).json()
    t.same(json.conversation.guest, { id: guestId, name: 'Anon Again', email: null }, 'JSON transcript: null, as in the API')
    const html = await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download?format=html`, headers })
    t.notMatch(html.body, /&lt;&gt;|null/)
  })

  await t.test('transcript e-mail: 400 EMAIL_REQUIRED without an address, until one is given', async (t) => {
    // Transcript e-mail to a guest without an address: 400 naming `email`.
    for (const [who, h, payload] of [
      ['visitor', headers, {}],
      ['visitor naming an address', headers, { email: 'someone@example.test' }],
      ['member', ws.agent.headers, {}],
    ] as const) {
      const r = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/transcript`, headers: h, payload })
      t.equal(r.statusCode, 400, who)
      t.match(r.json(), { code: 'EMAIL_REQUIRED', message: /'email'/ })
    }
    const named = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/transcript`, headers: ws.agent.headers, payload: { email: 'ops@example.test' } })
    t.equal(named.statusCode, 200, 'a member may name an address')

    // The address given later (resume with e-mail) fills it in; a resume without keeps it.
    await boot({ channelId: ws.channelId, name: 'Anon Again', email: 'anon@example.test' }, headers)
    await boot({ channelId: ws.channelId, name: 'Anon Again' }, headers)
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers })).json().guest.email, 'anon@example.test')
    const mine = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/transcript`, headers, payload: {} })
    t.equal(mine.statusCode, 200, 'now the visitor can mail itself the transcript')
  })
})
