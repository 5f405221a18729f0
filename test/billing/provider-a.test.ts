import { createHmac } from 'node:crypto'
import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { eventA, nowS, postA, SECRET_A, SECRET_A_OLD, signA, uniq } from './fixtures.js'

t.test('provider A webhooks: HMAC verification over the raw body', async (t) => {
  const { app, logs } = await build(t, {
    captureLogs: true,
    env: { PROVIDER_A_WEBHOOK_SECRET: `${SECRET_A_OLD}, ${SECRET_A}`, PROVIDER_A_TOLERANCE_S: '300' },
  })
  const ws = await seedWorkspace(app)
  const events = async (id: string) => app.deps.sql`SELECT outcome, workspace_id FROM webhook_events WHERE provider = 'provider-a' AND event_id = ${id}`

  // Unusual spacing and `1.0`: any re-serialisation changes these bytes.
  const id = uniq('evt')
  const payload = `{ "id": "${id}",  "type": "invoice.paid", "created": ${nowS()}, "api_version": 1.0,
    "data": { "object": { "id": "in_1", "amount_paid": 1999, "currency": "usd", "metadata": { "workspaceId": "${ws.workspaceId}" } } } }`

  await t.test('a header made by an independent implementation passes', async (t) => {
    const res = await postA(app, payload, signA(payload))
    t.equal(res.statusCode, 200)
    t.same(res.json(), { received: true })
    t.same(await events(id), [{ outcome: 'processed', workspace_id: ws.workspaceId }])
    const [pay] = await app.deps.sql`SELECT amount, currency, kind FROM payments WHERE provider_object_id = 'in_1'`
    t.same({ ...pay, amount: Number(pay.amount) }, { amount: 1999, currency: 'USD', kind: 'payment' })
  })

  await t.test('refused signatures get 400 INVALID_SIGNATURE and record nothing', async (t) => {
    const rid = uniq('evt')
    const body = eventA('invoice.paid', { id: 'in_refused', amount_paid: 500, currency: 'usd', metadata: { workspaceId: ws.workspaceId } }, { id: rid })
    const reserialised = `{ "id": "${rid}", "type": "customer.subscription.deleted", "created": ${nowS()}, "n": 1.0, "data": { "object": { "id": "sub_x" } } }`
    const t0 = nowS()
    const v1 = (secret: string, ts: number, b = body) => createHmac('sha256', secret).update(`${ts}.${b}`).digest('hex')
    const cases: [string, string, string | null][] = [
      ['re-serialised body', JSON.stringify(JSON.parse(reserialised)), signA(reserialised)],
      ['tampered body', body.replace('500', '50000'), signA(body)],
      ['stale timestamp', body, signA(body, SECRET_A, t0 - 301)],
      ['timestamp far in the future', body, signA(body, SECRET_A, t0 + 3600)],
      ['v0-only header', body, `t=${t0},v0=${v1(SECRET_A, t0)}`],
      ['wrong secret', body, signA(body, 'whsec_wrong_secret_value')],
      ['missing header', body, null],
      ['empty header', body, ''],
      ['signature of another timestamp', body, `t=${t0},v1=${v1(SECRET_A, t0 - 1)}`],
      ['two timestamps', body, `t=${t0 - 1000},t=${t0},v1=${v1(SECRET_A, t0)}`],
      ['garbage header', body, 'not a signature'],
    ]
    for (const [name, sent, header] of cases) {
      const res = await postA(app, sent, header)
      t.equal(res.statusCode, 400, name)
      t.match(res.json(), { statusCode: 400, error: 'Bad Request', code: 'INVALID_SIGNATURE' }, name)
    }
    t.same(await events(rid), [], 'nothing recorded')
    t.same(await app.deps.sql`SELECT 1 FROM payments WHERE provider_object_id = 'in_refused'`, [])
  })

  await t.test('secret rotation: either configured secret passes; one matching v1 among several is enough', async (t) => {
    const b1 = eventA('customer.subscription.updated', { id: 'sub_rot', status: 'active', metadata: { workspaceId: ws.workspaceId } })
    t.equal((await postA(app, b1, signA(b1, SECRET_A_OLD))).statusCode, 200, 'old secret')
    const b2 = eventA('customer.subscription.updated', { id: 'sub_rot', status: 'active', metadata: { workspaceId: ws.workspaceId } })
    const ts = nowS()
    const good = createHmac('sha256', SECRET_A).update(`${ts}.${b2}`).digest('hex')
    const bad = createHmac('sha256', 'whsec_not_ours').update(`${ts}.${b2}`).digest('hex')
    t.equal((await postA(app, b2, `t=${ts},v1=${bad},v0=${good},v1=${good}`)).statusCode, 200, 'new secret, second v1')
  })

  await t.test('a duplicate delivery gets 200 and changes nothing', async (t) => {
    const before = await app.deps.sql`SELECT count(*)::int AS n FROM payments`
    const res = await postA(app, payload, signA(payload))
    t.equal(res.statusCode, 200)
    t.same(res.json(), { received: true })
    t.same(await app.deps.sql`SELECT count(*)::int AS n FROM payments`, before)
    t.ok(logs.some((l) => l.eventId === id && l.outcome === 'duplicate'))
  })

  await t.test('unknown types are recorded and acknowledged', async (t) => {
    const eid = uniq('evt')
    const body = eventA('customer.created', { id: 'cus_1', metadata: { workspaceId: ws.workspaceId } }, { id: eid })
    const res = await postA(app, body)
    t.equal(res.statusCode, 200)
    t.same(await events(eid), [{ outcome: 'ignored', workspace_id: ws.workspaceId }])
  })

  await t.test('an unknown workspace is recorded, acknowledged and logged as a warning', async (t) => {
    for (const ref of ['4b0d3c1e-1111-4222-8333-944455556666', 'not-a-uuid', undefined]) {
      const eid = uniq('evt')
      const body = eventA('invoice.paid', { id: uniq('in'), amount_paid: 100, currency: 'eur', metadata: ref ? { workspaceId: ref } : {} }, { id: eid })
      const res = await postA(app, body)
      t.equal(res.statusCode, 200, String(ref))
      t.same(await events(eid), [{ outcome: 'unknown_workspace', workspace_id: null }])
      t.ok(logs.some((l) => l.eventId === eid && l.level === 40), 'warn line')
    }
    t.same(await app.deps.sql`SELECT 1 FROM payments WHERE currency = 'EUR'`, [], 'no ledger row')
  })

  await t.test('client_reference_id names the workspace too', async (t) => {
    const body = eventA('checkout.session.completed', { id: 'cs_1', client_reference_id: ws.workspaceId, subscription: 'sub_cs', metadata: { plan: 'pro' } })
    t.equal((await postA(app, body)).statusCode, 200)
    const [row] = await app.deps.sql`SELECT status, plan, provider FROM subscriptions WHERE workspace_id = ${ws.workspaceId}`
    t.same(row, { status: 'active', plan: 'pro', provider: 'provider-a' })
  })

  await t.test('verified but malformed bodies get 400 INVALID_PAYLOAD, other content types 415', async (t) => {
    const notJson = '{"id": "evt_x", '
    let res = await postA(app, notJson)
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'INVALID_PAYLOAD')
    const noId = JSON.stringify({ type: 'invoice.paid', created: nowS(), data: { object: {} } })
    res = await postA(app, noId)
    t.equal(res.json().code, 'INVALID_PAYLOAD')
    const badAmount = eventA('invoice.paid', { id: 'in_bad', amount_paid: '12.5', currency: 'usd', metadata: { workspaceId: ws.workspaceId } })
    res = await postA(app, badAmount)
    t.equal(res.statusCode, 400)
    t.match(res.json(), { code: 'INVALID_PAYLOAD', message: /amount/ })
    const badCurrency = eventA('invoice.paid', { id: 'in_bad', amount_paid: 12, currency: 'dollars', metadata: { workspaceId: ws.workspaceId } })
    t.equal((await postA(app, badCurrency)).json().code, 'INVALID_PAYLOAD')
    const noCreated = JSON.stringify({ id: uniq('evt'), type: 'invoice.paid', data: { object: { id: 'in_nc', amount_paid: 1, currency: 'usd' } } })
    t.equal((await postA(app, noCreated)).json().code, 'INVALID_PAYLOAD')
    res = await app.inject({ method: 'POST', url: '/billing/webhooks/provider-a', headers: { 'content-type': 'text/plain', 'provider-a-signature': signA('x') }, payload: 'x' })
    t.equal(res.statusCode, 415)
    t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
  })

  await t.test('the raw-body parser stays inside the webhook scope', async (t) => {
    // Outside routes/billing/webhooks the app's JSON parser still runs (and refuses bad JSON);
    // a leaked buffer parser would accept these bytes and answer 404.
    for (const url of ['/nowhere', '/billing/nowhere']) {
      const res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '{"a": ' })
      t.equal(res.statusCode, 400, url)
      t.equal(res.json().code, 'INVALID_JSON', url)
    }
  })
})

t.test('provider A without a configured secret answers 503 NOT_CONFIGURED', async (t) => {
  const { app } = await build(t)
  const body = eventA('invoice.paid', { id: 'in_1' })
  const res = await postA(app, body)
  t.equal(res.statusCode, 503)
  t.match(res.json(), { statusCode: 503, code: 'NOT_CONFIGURED' })
})

t.test('the signature header name is configurable', async (t) => {
  const { app } = await build(t, { env: { PROVIDER_A_WEBHOOK_SECRET: SECRET_A, PROVIDER_A_SIGNATURE_HEADER: 'X-Hook-Signature' } })
  const body = eventA('customer.created', { id: 'cus_1' })
  t.equal((await postA(app, body)).statusCode, 400, 'default header name no longer read')
  const res = await postA(app, body, null, { 'x-hook-signature': signA(body) })
  t.equal(res.statusCode, 200)
})
