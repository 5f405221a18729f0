import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { eventA, eventB, isoAt, nowS, postA, postB, providerAEnv, providerBEnv, startFakeProviderB, uniq } from './fixtures.js'

t.test('subscription state, ordering, ledger and exactly-once', async (t) => {
  const fake = await startFakeProviderB(t)
  const env = { ...providerAEnv, ...providerBEnv(fake.url) }
  const { app, databaseUrl, logs } = await build(t, { env, captureLogs: true })
  const subscription = async (ws: string) =>
    (await app.deps.sql`SELECT status, provider, plan, provider_subscription_id AS sub, current_period_end AS cpe, last_event_at FROM subscriptions WHERE workspace_id = ${ws}`)[0]
  const ledger = async (ws: string) =>
    app.deps.sql`SELECT provider, kind, amount::int, currency, provider_object_id AS object FROM payments WHERE workspace_id = ${ws} ORDER BY occurred_at, provider_object_id`
  const base = nowS() - 3600

  await t.test('provider A: an activation arriving after the cancellation does not revive it', async (t) => {
    const ws = await seedWorkspace(app)
    const meta = { workspaceId: ws.workspaceId }
    const activation = eventA('customer.subscription.updated', {
      id: 'sub_1', status: 'active', metadata: meta, current_period_end: base + 86400 * 30,
      items: { data: [{ price: { id: 'price_1', lookup_key: 'pro_monthly' } }] },
    }, { created: base + 10 })
    const cancellation = eventA('customer.subscription.deleted', { id: 'sub_1', status: 'canceled', metadata: meta }, { created: base + 20 })
    t.equal((await postA(app, cancellation)).statusCode, 200)
    t.equal((await postA(app, activation)).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'canceled', provider: 'provider-a', sub: 'sub_1', last_event_at: isoAt(base + 20).replace('T', ' ').replace('.000Z', '+00') })
    // In order, the activation applies and the cancellation then wins too.
    const ws2 = await seedWorkspace(app)
    const m2 = { workspaceId: ws2.workspaceId }
    t.equal((await postA(app, eventA('customer.subscription.created', { id: 'sub_2', status: 'active', metadata: m2, items: { data: [{ price: { id: 'price_9' } }] } }, { created: base + 10 }))).statusCode, 200)
    t.match(await subscription(ws2.workspaceId), { status: 'active', plan: 'price_9' })
    t.equal((await postA(app, eventA('customer.subscription.deleted', { id: 'sub_2', metadata: m2 }, { created: base + 20 }))).statusCode, 200)
    t.match(await subscription(ws2.workspaceId), { status: 'canceled', plan: 'price_9' })
    // A newer activation (a new subscription) does apply.
    t.equal((await postA(app, eventA('customer.subscription.created', { id: 'sub_3', status: 'trialing', metadata: m2 }, { created: base + 30 }))).statusCode, 200)
    t.match(await subscription(ws2.workspaceId), { status: 'active', sub: 'sub_3' })
  })

  await t.test('provider A: a payment failure arriving after a later payment does not mark it past_due', async (t) => {
    const ws = await seedWorkspace(app)
    const meta = { workspaceId: ws.workspaceId }
    const failed = eventA('invoice.payment_failed', { id: 'in_f1', amount_due: 2900, currency: 'usd', metadata: meta }, { created: base + 100 })
    const paid = eventA('invoice.paid', { id: 'in_p2', amount_paid: 2900, currency: 'usd', metadata: meta }, { created: base + 200 })
    t.equal((await postA(app, paid)).statusCode, 200)
    t.equal((await postA(app, failed)).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'active' })
    t.same(await ledger(ws.workspaceId), [
      { provider: 'provider-a', kind: 'failure', amount: 2900, currency: 'USD', object: 'in_f1' },
      { provider: 'provider-a', kind: 'payment', amount: 2900, currency: 'USD', object: 'in_p2' },
    ], 'both outcomes are in the ledger')
    // A newer failure does move it.
    t.equal((await postA(app, eventA('invoice.payment_failed', { id: 'in_f3', amount_due: 2900, currency: 'usd', metadata: meta }, { created: base + 300 }))).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'past_due' })
  })

  await t.test('events of the same second settle the same way whatever the arrival order', async (t) => {
    for (const order of ['cancel-first', 'activate-first']) {
      const ws = await seedWorkspace(app)
      const meta = { workspaceId: ws.workspaceId }
      const a = eventA('customer.subscription.updated', { id: 'sub_t', status: 'active', metadata: meta }, { created: base + 500 })
      const c = eventA('customer.subscription.deleted', { id: 'sub_t', metadata: meta }, { created: base + 500 })
      for (const body of order === 'cancel-first' ? [c, a] : [a, c]) t.equal((await postA(app, body)).statusCode, 200)
      t.match(await subscription(ws.workspaceId), { status: 'canceled' }, order)
    }
  })

  await t.test('provider B: ordering by create_time, amounts in minor units', async (t) => {
    const ws = await seedWorkspace(app)
    const at = (s: number) => new Date((base + s) * 1000).toISOString()
    const r = (extra: Record<string, unknown>) => ({ custom_id: ws.workspaceId, ...extra })
    const activated = eventB('BILLING.SUBSCRIPTION.ACTIVATED', r({ id: 'I-SUB', plan_id: 'P-PRO', status: 'ACTIVE', billing_info: { next_billing_time: '2026-12-21T10:00:00Z' } }), { createTime: at(10) })
    const sale = eventB('PAYMENT.SALE.COMPLETED', r({ id: 'SALE-9', amount: { total: '19.99', currency: 'USD' }, billing_agreement_id: 'I-SUB' }), { createTime: at(30) })
    const failed = eventB('BILLING.SUBSCRIPTION.PAYMENT.FAILED', r({ id: 'I-SUB', billing_info: { last_failed_payment: { amount: { value: '19.99', currency_code: 'USD' }, time: at(20) } } }), { createTime: at(20) })
    const cancelled = eventB('BILLING.SUBSCRIPTION.CANCELLED', r({ id: 'I-SUB' }), { createTime: at(40) })
    const refund = eventB('PAYMENT.SALE.REFUNDED', r({ id: 'REF-9', sale_id: 'SALE-9', amount: { total: '-5.00', currency: 'USD' } }), { createTime: at(50) })
    for (const body of [sale, activated, failed]) t.equal((await postB(app, body)).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'active', provider: 'provider-b', plan: 'P-PRO', cpe: '2026-12-21 10:00:00+00' })
    for (const body of [refund, cancelled, activated]) t.equal((await postB(app, body)).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'canceled', plan: 'P-PRO' })
    t.same(await ledger(ws.workspaceId), [
      { provider: 'provider-b', kind: 'failure', amount: 1999, currency: 'USD', object: `I-SUB:${at(20)}` },
      { provider: 'provider-b', kind: 'payment', amount: 1999, currency: 'USD', object: 'SALE-9' },
      { provider: 'provider-b', kind: 'refund', amount: 500, currency: 'USD', object: 'REF-9' },
    ])
  })

  await t.test('provider B: capture denied and capture refunded', async (t) => {
    const ws = await seedWorkspace(app)
    const at = (s: number) => new Date((base + s) * 1000).toISOString()
    const r = (extra: Record<string, unknown>) => ({ custom_id: ws.workspaceId, ...extra })
    const denied = eventB('PAYMENT.CAPTURE.DENIED', r({ id: 'CAP-D', amount: { value: '10.00', currency_code: 'CAD' } }), { createTime: at(10) })
    const completed = eventB('PAYMENT.CAPTURE.COMPLETED', r({ id: 'CAP-OK', amount: { value: '10.00', currency_code: 'CAD' } }), { createTime: at(20) })
    const refunded = eventB('PAYMENT.CAPTURE.REFUNDED', r({ id: 'REF-C', amount: { value: '2.50', currency_code: 'CAD' } }), { createTime: at(30) })
    t.equal((await postB(app, denied)).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'past_due' })
    for (const body of [completed, refunded, refunded]) t.equal((await postB(app, body)).statusCode, 200)
    t.match(await subscription(ws.workspaceId), { status: 'active' })
    t.same(await ledger(ws.workspaceId), [
      { provider: 'provider-b', kind: 'failure', amount: 1000, currency: 'CAD', object: 'CAP-D' },
      { provider: 'provider-b', kind: 'payment', amount: 1000, currency: 'CAD', object: 'CAP-OK' },
      { provider: 'provider-b', kind: 'refund', amount: 250, currency: 'CAD', object: 'REF-C' },
    ])
  })

  await t.test('the ledger has one row per provider object and kind', async (t) => {
    const ws = await seedWorkspace(app)
    const meta = { workspaceId: ws.workspaceId }
    const invoice = { id: 'in_dup', amount_paid: 1500, currency: 'eur', metadata: meta }
    t.equal((await postA(app, eventA('invoice.paid', invoice))).statusCode, 200)
    t.equal((await postA(app, eventA('invoice.payment_succeeded', invoice))).statusCode, 200)
    // A charge.refunded listing two refunds, then refund.created for one of them.
    const refunds = { data: [{ id: 're_1', amount: 500, currency: 'eur', created: base }, { id: 're_2', amount: 250, currency: 'eur', created: base + 1 }, { id: 're_3', amount: 9, status: 'failed' }] }
    t.equal((await postA(app, eventA('charge.refunded', { id: 'ch_1', amount_refunded: 750, currency: 'eur', refunds, metadata: meta }))).statusCode, 200)
    t.equal((await postA(app, eventA('refund.created', { id: 're_1', amount: 500, currency: 'eur', metadata: meta }))).statusCode, 200)
    t.same(await ledger(ws.workspaceId), [
      { provider: 'provider-a', kind: 'refund', amount: 500, currency: 'EUR', object: 're_1' },
      { provider: 'provider-a', kind: 'refund', amount: 250, currency: 'EUR', object: 're_2' },
      { provider: 'provider-a', kind: 'payment', amount: 1500, currency: 'EUR', object: 'in_dup' },
    ])
    t.match(await subscription(ws.workspaceId), { status: 'active' }, 'refunds leave the subscription alone')
  })

  await t.test('20 concurrent deliveries across two app instances change the state once', async (t) => {
    const second = await build(t, { databaseUrl, env, captureLogs: true })
    const ws = await seedWorkspace(app)
    const id = uniq('evt')
    const body = eventA('invoice.paid', { id: 'in_conc', amount_paid: 4200, currency: 'usd', metadata: { workspaceId: ws.workspaceId } }, { id, created: base + 900 })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => postA(i % 2 ? second.app : app, body)))
    t.same(results.map((r) => r.statusCode), Array(20).fill(200))
    t.ok(results.every((r) => r.json().received === true))
    const lines = [...logs, ...second.logs].filter((l) => l.eventId === id)
    t.equal(lines.filter((l) => l.outcome === 'processed').length, 1, 'the handler ran once')
    t.equal(lines.filter((l) => l.outcome === 'duplicate').length, 19)
    t.same(await app.deps.sql`SELECT count(*)::int AS n FROM webhook_events WHERE event_id = ${id}`, [{ n: 1 }])
    t.same(await ledger(ws.workspaceId), [{ provider: 'provider-a', kind: 'payment', amount: 4200, currency: 'USD', object: 'in_conc' }])
    t.match(await subscription(ws.workspaceId), { status: 'active' })
  })

  await t.test('a database failure mid-way rolls everything back; the retry succeeds', async (t) => {
    const ws = await seedWorkspace(app)
    const meta = { workspaceId: ws.workspaceId }
    t.equal((await postA(app, eventA('customer.subscription.deleted', { id: 'sub_f', metadata: meta }, { created: base }))).statusCode, 200)
    const id = uniq('evt')
    // invoice.paid writes the ledger row first, then the subscription: the trigger fails the second write.
    const body = eventA('invoice.paid', { id: 'in_fail', amount_paid: 700, currency: 'usd', metadata: meta }, { id, created: base + 60 })
    await app.deps.sql.unsafe(`
      CREATE FUNCTION billing_test_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$;
      CREATE TRIGGER billing_test_fail BEFORE INSERT OR UPDATE ON subscriptions FOR EACH ROW EXECUTE FUNCTION billing_test_fail();`)
    const res = await postA(app, body)
    t.equal(res.statusCode, 500)
    t.same(res.json(), { statusCode: 500, error: 'Internal Server Error', code: 'INTERNAL_ERROR', message: 'Internal Server Error' })
    t.same(await app.deps.sql`SELECT 1 FROM webhook_events WHERE event_id = ${id}`, [], 'the event is not recorded')
    t.same(await ledger(ws.workspaceId), [], 'the ledger row written before the failure is rolled back')
    t.match(await subscription(ws.workspaceId), { status: 'canceled' })
    await app.deps.sql.unsafe('DROP TRIGGER billing_test_fail ON subscriptions; DROP FUNCTION billing_test_fail();')
    t.equal((await postA(app, body)).statusCode, 200, 'the provider retry is processed')
    t.same(await ledger(ws.workspaceId), [{ provider: 'provider-a', kind: 'payment', amount: 700, currency: 'USD', object: 'in_fail' }])
    t.match(await subscription(ws.workspaceId), { status: 'active' })
  })

  await t.test('a database that is down answers 503; the retry at a healthy replica succeeds', async (t) => {
    const down = await build(t, { databaseUrl, env })
    await down.app.deps.sql.end({ timeout: 1 })
    const ws = await seedWorkspace(app)
    const id = uniq('evt')
    const body = eventA('invoice.paid', { id: 'in_down', amount_paid: 300, currency: 'usd', metadata: { workspaceId: ws.workspaceId } }, { id })
    const res = await postA(down.app, body)
    t.equal(res.statusCode, 503)
    t.match(res.json(), { statusCode: 503, code: 'DEPENDENCY_UNAVAILABLE' })
    t.ok(res.headers['retry-after'])
    t.same(await app.deps.sql`SELECT 1 FROM webhook_events WHERE event_id = ${id}`, [])
    t.equal((await postA(app, body)).statusCode, 200)
    t.same(await app.deps.sql`SELECT outcome FROM webhook_events WHERE event_id = ${id}`, [{ outcome: 'processed' }])
  })
})
