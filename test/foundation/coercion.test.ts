import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

// API.md section 1: body values are never coerced (a number or an array where the schema says
// string is a 400); query strings are text and may be converted.

t.test('bodies are never coerced, through a real route', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conversation = await startConversation(app, guest)
  const post = (payload: unknown) =>
    app.inject({ method: 'POST', url: `/conversations/${conversation.id}/messages`, headers: ws.agent.headers, payload: payload as object })

  for (const [label, body] of [
    ['a number', 12345],
    ['an array of one string', ['hi']],
    ['a boolean', true],
    ['null', null],
  ] as const) {
    const res = await post({ body })
    t.equal(res.statusCode, 400, `${label} where a string is expected is a 400`)
    t.match(res.json(), { statusCode: 400, code: 'VALIDATION_ERROR', message: /field 'body' must be string/ })
  }
  const bad = await post({ body: 'fine', clientMessageId: 42 })
  t.equal(bad.statusCode, 400, 'an optional string field is not coerced either')
  t.match(bad.json().message, /clientMessageId/)

  const messages = await app.deps.sql`SELECT id FROM messages`
  t.equal(messages.length, 0, 'nothing was stored for the refused bodies')

  const ok = await post({ body: '12345' })
  t.equal(ok.statusCode, 201, 'the same value sent as a string is accepted')
  t.equal(ok.json().body, '12345')

  // Anonymous callers too: a UUID inside an array is not a UUID.
  const visitor = { channelId: ws.channelId, name: 'Vera', email: 'vera@example.test' }
  const auth = await app.inject({ method: 'POST', url: '/auth', payload: { ...visitor, channelId: [ws.channelId] } })
  t.equal(auth.statusCode, 400)
  t.match(auth.json(), { code: 'VALIDATION_ERROR', message: /channelId/ })
  const named = await app.inject({ method: 'POST', url: '/auth', payload: { ...visitor, name: 12345 } })
  t.equal(named.statusCode, 400, 'a number is not a name')
  t.match(named.json(), { code: 'VALIDATION_ERROR', message: /'name'/ })
  const fine = await app.inject({ method: 'POST', url: '/auth', payload: visitor })
  t.equal(fine.statusCode, 201, 'the same body with proper types is accepted')
})

t.test('query strings and path parameters are text and are still converted', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conversation = await startConversation(app, guest)
  for (let i = 0; i < 3; i++) {
    const r = await app.inject({ method: 'POST', url: `/conversations/${conversation.id}/messages`, headers: ws.agent.headers, payload: { body: `m${i}` } })
    t.equal(r.statusCode, 201)
  }
  const res = await app.inject({ method: 'GET', url: `/conversations/${conversation.id}/messages?limit=2`, headers: ws.agent.headers })
  t.equal(res.statusCode, 200, '?limit=2 is the integer 2')
  t.equal(res.json().data.length, 2)
  t.type(res.json().nextCursor, 'string')
  const notNumber = await app.inject({ method: 'GET', url: `/conversations/${conversation.id}/messages?limit=two`, headers: ws.agent.headers })
  t.equal(notNumber.statusCode, 400, 'text that is not a number is still refused')
  t.match(notNumber.json().message, /limit/)

  // Found by the fuzz sweep: Ajv coerced "1e309" to Infinity and skipped `maximum`, so the lists
  // ran LIMIT Infinity in SQL (500).
  for (const url of ['/auth/members?pageSize=1e309', '/auth/members?page=1e309', '/conversations?limit=1e309', `/conversations/${conversation.id}/messages?limit=-1e309`]) {
    const res = await app.inject({ method: 'GET', url, headers: ws.owner.headers })
    t.equal(res.statusCode, 400, `${url}: 400, not 500`)
    t.match(res.json(), { code: 'VALIDATION_ERROR', message: /in querystring must be (a finite number|>= 1)/ })
  }
})
