import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { eventB, headersB, postB, providerBEnv, startFakeProviderB, uniq, WEBHOOK_ID_B } from './fixtures.js'

const recorded = async (app: Awaited<ReturnType<typeof build>>['app'], id: string) =>
  app.deps.sql`SELECT outcome FROM webhook_events WHERE provider = 'provider-b' AND event_id = ${id}`

t.test('provider B webhooks: verification through the provider API', async (t) => {
  const fake = await startFakeProviderB(t)
  const { app, databaseUrl } = await build(t, { env: providerBEnv(fake.url) })
  const ws = await seedWorkspace(app)

  await t.test('the body goes to verify-webhook-signature byte for byte; the OAuth call is right', async (t) => {
    const id = uniq('WH')
    // `1.0`, `19.990` and odd spacing: re-serialising parsed JSON would change each of them.
    const payload = `{"id":"${id}",  "event_type" : "PAYMENT.CAPTURE.COMPLETED","create_time":"2026-11-21T10:00:00.123456Z",
      "resource_type":"capture","summary":"Payment completed for $ 19.99 USD","version": 1.0,
      "resource":{"id":"CAP-1","amount":{"currency_code":"USD","value":"19.99"},"custom_id":"${ws.workspaceId}","fee": 0.30}}`
    const headers = headersB()
    const res = await postB(app, payload, headers)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { received: true })
    t.same(fake.problems, [], 'the fake found nothing wrong')
    t.equal(fake.tokenCalls(), 1)
    const [verify] = fake.verifyCalls()
    const sent = verify.body.toString('utf8')
    t.ok(sent.endsWith(`"webhook_event":${payload}}`), 'webhook_event holds the raw bytes received')
    const parsed = JSON.parse(sent)
    t.same(parsed, {
      auth_algo: headers['provider-b-auth-algo'],
      cert_url: headers['provider-b-cert-url'],
      transmission_id: headers['provider-b-transmission-id'],
      transmission_sig: headers['provider-b-transmission-sig'],
      transmission_time: headers['provider-b-transmission-time'],
      webhook_id: WEBHOOK_ID_B,
      webhook_event: JSON.parse(payload),
    })
    t.equal(verify.headers['content-type'], 'application/json')
    t.same(await recorded(app, id), [{ outcome: 'processed' }])
    const [row] = await app.deps.sql`SELECT amount::int, currency, kind, occurred_at FROM payments WHERE provider_object_id = 'CAP-1'`
    t.same(row, { amount: 1999, currency: 'USD', kind: 'payment', occurred_at: '2026-11-21 10:00:00.123456+00' })
  })

  await t.test('the token is cached: several webhooks, one token call', async (t) => {
    for (const [value, currency, objectId] of [['1000', 'JPY', 'CAP-JPY'], ['5.5', 'eur', 'CAP-EUR'], ['1.234', 'KWD', 'CAP-KWD']]) {
      const body = eventB('PAYMENT.CAPTURE.COMPLETED', { id: objectId, amount: { value, currency_code: currency }, custom_id: ws.workspaceId })
      t.equal((await postB(app, body)).statusCode, 200)
    }
    t.equal(fake.tokenCalls(), 1, 'still the first token')
    t.equal(fake.verifyCalls().length, 4)
    const rows = await app.deps.sql`SELECT provider_object_id AS id, amount::int, currency FROM payments WHERE provider_object_id IN ('CAP-JPY','CAP-EUR','CAP-KWD') ORDER BY 1`
    t.same(rows, [
      { id: 'CAP-EUR', amount: 550, currency: 'EUR' },
      { id: 'CAP-JPY', amount: 1000, currency: 'JPY' },
      { id: 'CAP-KWD', amount: 1234, currency: 'KWD' },
    ])
  })

  await t.test('FAILURE is 400 and records nothing', async (t) => {
    fake.mode.verify = 'FAILURE'
    const id = uniq('WH')
    const res = await postB(app, eventB('BILLING.SUBSCRIPTION.CANCELLED', { id: 'I-1', custom_id: ws.workspaceId }, { id }))
    fake.mode.verify = 'SUCCESS'
    t.equal(res.statusCode, 400)
    t.match(res.json(), { statusCode: 400, code: 'INVALID_SIGNATURE' })
    t.same(await recorded(app, id), [])
  })

  await t.test('missing transmission headers are 400 without calling the provider', async (t) => {
    const before = fake.verifyCalls().length
    const headers: Record<string, string> = headersB()
    delete headers['provider-b-transmission-sig']
    const res = await postB(app, eventB('BILLING.SUBSCRIPTION.CANCELLED', { id: 'I-1', custom_id: ws.workspaceId }), headers)
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'INVALID_SIGNATURE')
    t.equal(fake.verifyCalls().length, before)
  })

  await t.test('a 5xx from the provider is 503, the event stays unprocessed, the retry succeeds', async (t) => {
    const id = uniq('WH')
    const body = eventB('PAYMENT.SALE.COMPLETED', { id: 'SALE-1', amount: { total: '49.00', currency: 'USD' }, custom_id: ws.workspaceId }, { id })
    fake.mode.verify = '500'
    const res = await postB(app, body)
    t.equal(res.statusCode, 503)
    t.match(res.json(), { statusCode: 503, code: 'DEPENDENCY_UNAVAILABLE' })
    t.same(await recorded(app, id), [])
    fake.mode.verify = 'SUCCESS'
    t.equal((await postB(app, body)).statusCode, 200)
    t.same(await recorded(app, id), [{ outcome: 'processed' }])
    t.same(await app.deps.sql`SELECT amount::int FROM payments WHERE provider_object_id = 'SALE-1'`, [{ amount: 4900 }])
  })

  await t.test('a refused token (401) is 503; the next request fetches a new one', async (t) => {
    // A fresh instance: its cache is empty, so the refused token request is the first one.
    const { app: app2 } = await build(t, { databaseUrl, env: providerBEnv(fake.url) })
    const id = uniq('WH')
    const body = eventB('BILLING.SUBSCRIPTION.ACTIVATED', { id: 'I-2', plan_id: 'P-1', custom_id: ws.workspaceId }, { id })
    fake.mode.token = '401'
    const calls = fake.tokenCalls()
    const res = await postB(app2, body)
    t.equal(res.statusCode, 503)
    t.same(await recorded(app2, id), [])
    fake.mode.token = 'ok'
    t.equal((await postB(app2, body)).statusCode, 200)
    t.equal(fake.tokenCalls(), calls + 2)
  })

  await t.test('a token the verify call refuses (401) is dropped and fetched again', async (t) => {
    fake.mode.verify = '401'
    const calls = fake.tokenCalls()
    const id = uniq('WH')
    const body = eventB('BILLING.SUBSCRIPTION.ACTIVATED', { id: 'I-3', custom_id: ws.workspaceId }, { id })
    t.equal((await postB(app, body)).statusCode, 503)
    t.equal(fake.tokenCalls(), calls + 1, 'one retry with a fresh token')
    fake.mode.verify = 'SUCCESS'
    t.equal((await postB(app, body)).statusCode, 200)
    t.equal(fake.tokenCalls(), calls + 2, 'the refused token was not kept')
  })

  await t.test('concurrent webhooks on a cold instance share one token request; expiry refreshes it', async (t) => {
    fake.mode.expiresIn = 1
    const { app: app3 } = await build(t, { databaseUrl, env: providerBEnv(fake.url) })
    const calls = fake.tokenCalls()
    const bodies = Array.from({ length: 5 }, () => eventB('CUSTOMER.DISPUTE.CREATED', { id: uniq('PP-D'), custom_id: ws.workspaceId }))
    const results = await Promise.all(bodies.map((b) => postB(app3, b)))
    t.same(results.map((r) => r.statusCode), [200, 200, 200, 200, 200])
    t.equal(fake.tokenCalls(), calls + 1)
    await new Promise((r) => setTimeout(r, 1000))
    t.equal((await postB(app3, eventB('CUSTOMER.DISPUTE.CREATED', { id: 'PP-D-x' }))).statusCode, 200)
    t.equal(fake.tokenCalls(), calls + 2, 'an expired token is replaced')
    fake.mode.expiresIn = 32400
  })

  await t.test('a timeout is 503 within PROVIDER_B_TIMEOUT_MS; the header prefix is configurable', async (t) => {
    const { app: app4 } = await build(t, {
      databaseUrl,
      env: providerBEnv(fake.url, { PROVIDER_B_TIMEOUT_MS: '300', PROVIDER_B_HEADER_PREFIX: 'paypal-' }),
    })
    const headers = Object.fromEntries(Object.entries(headersB()).map(([k, v]) => [k.replace('provider-b-', 'paypal-'), v]))
    const id = uniq('WH')
    const body = eventB('BILLING.SUBSCRIPTION.CANCELLED', { id: 'I-4', custom_id: ws.workspaceId }, { id })
    fake.mode.verify = 'hang'
    const started = Date.now()
    const res = await postB(app4, body, headers)
    const took = Date.now() - started
    fake.mode.verify = 'SUCCESS'
    t.equal(res.statusCode, 503)
    t.ok(took >= 250 && took < 3000, `answered after ${took} ms`)
    t.same(await recorded(app4, id), [])
    t.equal((await postB(app4, body, headers)).statusCode, 200, 'the retry succeeds')
    t.same(await recorded(app4, id), [{ outcome: 'processed' }])
  })

  await t.test('an unreachable provider is 503', async (t) => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer()
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as AddressInfo).port
        srv.close(() => resolve(p))
      })
    })
    const { app: app5 } = await build(t, { databaseUrl, env: providerBEnv(`http://127.0.0.1:${port}`) })
    const id = uniq('WH')
    const res = await postB(app5, eventB('BILLING.SUBSCRIPTION.CANCELLED', { id: 'I-5', custom_id: ws.workspaceId }, { id }))
    t.equal(res.statusCode, 503)
    t.equal(res.json().code, 'DEPENDENCY_UNAVAILABLE')
    t.same(await recorded(app5, id), [])
  })

  await t.test('malformed bodies are 400 INVALID_PAYLOAD', async (t) => {
    let res = await postB(app, '{"id": ')
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'INVALID_PAYLOAD')
    res = await postB(app, eventB('PAYMENT.CAPTURE.COMPLETED', { id: 'CAP-X', amount: { value: '19.999', currency_code: 'USD' }, custom_id: ws.workspaceId }))
    t.equal(res.statusCode, 400)
    t.match(res.json(), { code: 'INVALID_PAYLOAD', message: /decimals/ })
    res = await postB(app, JSON.stringify({ id: uniq('WH'), event_type: 'PAYMENT.CAPTURE.COMPLETED', create_time: 'yesterday', resource: { id: 'CAP-Y' } }))
    t.equal(res.json().code, 'INVALID_PAYLOAD')
  })
})

t.test('provider B without configuration answers 503 NOT_CONFIGURED', async (t) => {
  const { app } = await build(t, { env: { PROVIDER_B_API_BASE: 'http://127.0.0.1:9', PROVIDER_B_CLIENT_ID: 'id' } })
  const res = await postB(app, eventB('BILLING.SUBSCRIPTION.CANCELLED', { id: 'I-1' }))
  t.equal(res.statusCode, 503)
  t.match(res.json(), { statusCode: 503, code: 'NOT_CONFIGURED' })
})
