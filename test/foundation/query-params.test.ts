import { Type } from '@sinclair/typebox'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

// API.md section 1: unknown query parameters are rejected with 400 on every route alike, except
// the provider-facing routes (webhooks and billing return routes), which ignore them.

t.test('unknown query parameters are a 400 on every route alike', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conversation = await startConversation(app, guest)
  const cases = [
    // Search used to ignore them while the other lists refused them.
    { url: '/conversations/search?q=hello&debug=1', headers: ws.owner.headers },
    { url: '/auth/members?page=1&utm_source=x', headers: ws.owner.headers },
    // Routes that take no query parameter at all.
    { url: `/conversations/${conversation.id}?debug=1`, headers: ws.owner.headers },
    { url: '/channels?debug=1', headers: ws.owner.headers },
    { url: '/conversations/unread-count?debug=1', headers: ws.owner.headers },
    { url: `/api/public/conversations/${conversation.id}/status?debug=1`, headers: {} },
    { url: '/health?debug=1', headers: {} },
  ]
  for (const c of cases) {
    const res = await app.inject({ method: 'GET', url: c.url, headers: c.headers })
    t.equal(res.statusCode, 400, `GET ${c.url}`)
    t.match(res.json(), { statusCode: 400, code: 'VALIDATION_ERROR', message: /unknown field '(debug|utm_source)' in querystring/ })
  }
  const post = await app.inject({
    method: 'POST',
    url: `/conversations/${conversation.id}/messages?debug=1`,
    headers: ws.owner.headers,
    payload: { body: 'hello' },
  })
  t.equal(post.statusCode, 400, 'a write route too')

  // Known parameters still work.
  t.equal((await app.inject({ method: 'GET', url: '/conversations/search?q=hello', headers: ws.owner.headers })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/auth/members?page=1&pageSize=5', headers: ws.owner.headers })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${conversation.id}`, headers: ws.owner.headers })).statusCode, 200)
})

t.test('provider-facing routes ignore the parameters providers add', async (t) => {
  const { app } = await build(t, { env: { PROVIDER_A_WEBHOOK_SECRET: 'whsec_query_test' } })
  const ret = await app.inject({ method: 'GET', url: '/billing/provider-a/return?status=success&token=EC-123&PayerID=ABC' })
  t.equal(ret.statusCode, 303)
  t.match(ret.headers.location, /status=success/)
  t.notMatch(ret.headers.location, /EC-123|ABC/, 'nothing of theirs is reflected')
  const hook = await app.inject({
    method: 'POST',
    url: '/billing/webhooks/provider-a?delivery=42',
    headers: { 'content-type': 'application/json', 'provider-a-signature': 't=1,v1=00' },
    payload: '{}',
  })
  t.equal(hook.statusCode, 400)
  t.equal(hook.json().code, 'INVALID_SIGNATURE', 'refused for its signature, not for the query')
})

t.test('a CORS preflight carries the real request query and is still answered', async (t) => {
  const { app } = await build(t)
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/conversations?limit=5&debug=1',
    headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
  })
  t.equal(res.statusCode, 204)
})

t.test('a route whose querystring schema would let unknown parameters through does not start', async (t) => {
  await t.rejects(
    build(t, {
      register: (app) =>
        app.get('/__loose', { config: { access: 'public' }, schema: { querystring: Type.Object({ a: Type.Optional(Type.String()) }) } }, async () => ({})),
    }),
    /GET \/__loose: its querystring schema must set additionalProperties: false/,
  )
  await t.rejects(
    build(t, {
      register: (app) =>
        app.get(
          '/__provider',
          { config: { access: 'public', providerFacing: true }, schema: { querystring: Type.Object({}, { additionalProperties: false }) } },
          async () => ({}),
        ),
    }),
    /provider-facing: its querystring schema must not refuse unknown parameters/,
  )
})
