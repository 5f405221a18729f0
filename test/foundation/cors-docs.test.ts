import t from 'tap'
import { build } from '../helper.js'

t.test('CORS: preflight answered; open routes allow any origin, member routes only CORS_ORIGINS', async (t) => {
  const { app } = await build(t, { env: { APP_URL: 'https://app.parley.test' } })
  const preflight = (url: string, origin: string, method = 'GET') =>
    app.inject({
      method: 'OPTIONS',
      url,
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,x-workspace-id' },
    })

  // /conversations/closed is member-only; the router matches it before the visitor-callable /:id.
  let res = await preflight('/conversations/closed', 'https://app.parley.test')
  t.ok(res.statusCode < 300)
  t.equal(res.headers['access-control-allow-origin'], 'https://app.parley.test')
  t.match(String(res.headers['access-control-allow-headers']), /x-workspace-id/)

  res = await preflight('/conversations/closed', 'https://evil.example')
  t.notOk(res.headers['access-control-allow-origin'], 'a foreign origin is not allowed on member routes')

  res = await preflight('/conversations/123', 'https://customer-site.example')
  t.equal(res.headers['access-control-allow-origin'], 'https://customer-site.example', 'visitor routes allow any origin (echoed)')
  res = await preflight('/conversations/123', 'https://customer-site.example', 'DELETE')
  t.notOk(res.headers['access-control-allow-origin'], 'the same URL is member-only for DELETE')
  res = await preflight('/no/such/route', 'https://customer-site.example')
  t.notOk(res.headers['access-control-allow-origin'], 'no route, no CORS')

  res = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://x.example' } })
  t.equal(res.headers['access-control-allow-origin'], 'https://x.example')
  t.match(String(res.headers['access-control-expose-headers']), /Retry-After/)
  res = await app.inject({ method: 'GET', url: '/no/such/route', headers: { origin: 'https://x.example' } })
  t.notOk(res.headers['access-control-allow-origin'], 'a 404 carries no CORS grant')
})

t.test('OpenAPI document is generated from the route schemas', async (t) => {
  const { app } = await build(t)
  const res = await app.inject({ method: 'GET', url: '/docs/json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.match(doc.openapi, /^3\./)
  t.ok(doc.paths['/health'].get.responses['200'], 'health response schema is documented')
  t.equal(doc.paths['/conversations/{id}/close'].patch.requestBody.required, false, 'a route taking no body documents an optional one')
  t.equal(doc.paths['/conversations/{id}/transcript'].post.requestBody.required, false, 'a body of optional fields may be absent')
  t.equal(doc.paths['/auth'].post.requestBody.required, true, 'a body with required fields is required')
  const page = await app.inject({ method: 'GET', url: '/docs' })
  t.ok(page.statusCode < 400)
})
