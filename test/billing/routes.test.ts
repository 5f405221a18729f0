import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { eventA, nowS, postA, providerAEnv } from './fixtures.js'

t.test('billing routes', async (t) => {
  const { app } = await build(t, { env: { ...providerAEnv, APP_URL: 'https://app.parley.test/agent/' } })
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')

  await t.test('return routes redirect with 303 and change nothing', async (t) => {
    const before = await app.deps.sql`SELECT (SELECT count(*) FROM subscriptions) + (SELECT count(*) FROM payments) + (SELECT count(*) FROM webhook_events) AS n`
    const cases: [string, string][] = [
      ['/billing/provider-a/return?status=success&session_id=cs_123', 'https://app.parley.test/agent/billing?provider=provider-a&status=success'],
      ['/billing/provider-a/return?status=cancel', 'https://app.parley.test/agent/billing?provider=provider-a&status=cancel'],
      ['/billing/provider-b/return?status=success&token=EC-1&PayerID=P1', 'https://app.parley.test/agent/billing?provider=provider-b&status=success'],
      ['/billing/provider-b/return', 'https://app.parley.test/agent/billing?provider=provider-b&status=cancel'],
      ['/billing/provider-a/return?status=%22%3E%3Cscript%3E', 'https://app.parley.test/agent/billing?provider=provider-a&status=cancel'],
      ['/billing/provider-a/return?status=SUCCESS', 'https://app.parley.test/agent/billing?provider=provider-a&status=cancel'],
    ]
    for (const [url, location] of cases) {
      const res = await app.inject({ method: 'GET', url })
      t.equal(res.statusCode, 303, url)
      t.equal(res.headers.location, location, url)
    }
    t.same(await app.deps.sql`SELECT (SELECT count(*) FROM subscriptions) + (SELECT count(*) FROM payments) + (SELECT count(*) FROM webhook_events) AS n`, before)
  })

  await t.test('GET /billing/subscription', async (t) => {
    let res = await app.inject({ method: 'GET', url: '/billing/subscription', headers: ws.owner.headers })
    t.equal(res.statusCode, 200)
    t.same(res.json(), { status: 'none', provider: null, plan: null, currentPeriodEnd: null, updatedAt: null })
    const end = nowS() + 86400 * 30
    const body = eventA('customer.subscription.created', {
      id: 'sub_r', status: 'active', current_period_end: end, metadata: { workspaceId: ws.workspaceId, plan: 'team' },
    })
    t.equal((await postA(app, body)).statusCode, 200)
    res = await app.inject({ method: 'GET', url: '/billing/subscription', headers: ws.admin.headers })
    t.equal(res.statusCode, 200)
    t.match(res.json(), { status: 'active', provider: 'provider-a', plan: 'team', currentPeriodEnd: new Date(end * 1000).toISOString() })
    t.ok(Date.parse(res.json().updatedAt))
    res = await app.inject({ method: 'GET', url: '/billing/subscription', headers: other.owner.headers })
    t.equal(res.json().status, 'none', 'another workspace sees its own state')
  })

  await t.test('billing:read is required', async (t) => {
    for (const url of ['/billing/subscription', '/billing/payments']) {
      let res = await app.inject({ method: 'GET', url, headers: ws.agent.headers })
      t.equal(res.statusCode, 403, url)
      t.equal(res.json().code, 'FORBIDDEN')
      res = await app.inject({ method: 'GET', url })
      t.equal(res.statusCode, 401, url)
      res = await app.inject({ method: 'GET', url, headers: { ...other.owner.headers, 'x-workspace-id': ws.workspaceId } })
      t.equal(res.statusCode, 403, url)
      t.equal(res.json().code, 'NOT_A_MEMBER')
    }
  })

  await t.test('GET /billing/payments pages the ledger newest first with signed cursors', async (t) => {
    // 7 rows, two of them sharing an occurred_at to exercise the id tie-break.
    const base = nowS() - 10_000
    const created = [base, base + 10, base + 20, base + 20, base + 30, base + 40, base + 50]
    for (const [i, c] of created.entries()) {
      const body = eventA('invoice.paid', { id: `in_page_${i}`, amount_paid: 100 + i, currency: 'gbp', metadata: { workspaceId: ws.workspaceId } }, { created: c })
      t.equal((await postA(app, body)).statusCode, 200)
    }
    await postA(app, eventA('invoice.paid', { id: 'in_other', amount_paid: 1, currency: 'usd', metadata: { workspaceId: other.workspaceId } }))
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const url: string = `/billing/payments?limit=3${cursor ? `&cursor=${cursor}` : ''}`
      const res = await app.inject({ method: 'GET', url, headers: ws.owner.headers })
      t.equal(res.statusCode, 200)
      const page = res.json()
      for (const p of page.data) {
        t.match(p, { provider: 'provider-a', kind: 'payment', currency: 'GBP' })
        t.type(p.amount, 'number')
        seen.push(p.providerObjectId)
      }
      cursor = page.nextCursor
      pages++
      // A new payment arriving while paging does not disturb the walk (it is newer than the cursor).
      if (pages === 1) await postA(app, eventA('invoice.paid', { id: 'in_late', amount_paid: 5, currency: 'gbp', metadata: { workspaceId: ws.workspaceId } }))
    } while (cursor)
    t.equal(pages, 3)
    t.equal(seen.length, 7)
    t.equal(new Set(seen).size, 7, 'every row exactly once')
    t.same(seen.slice(0, 2), ['in_page_6', 'in_page_5'])
    t.same(seen.slice(-1), ['in_page_0'])
    t.notOk(seen.includes('in_other'))

    const first = (await app.inject({ method: 'GET', url: '/billing/payments?limit=1', headers: ws.owner.headers })).json()
    t.same(Object.keys(first.data[0]).sort(), ['amount', 'currency', 'id', 'kind', 'occurredAt', 'provider', 'providerObjectId'])
    const good: string = first.nextCursor
    const [data, sig] = good.split('.')
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(data, 'base64url').toString()), id: '00000000-0000-4000-8000-000000000000' })).toString('base64url')
    for (const bad of [`${forged}.${sig}`, `${data}.${sig.slice(0, -2)}AA`, 'garbage', `${data}`]) {
      const res = await app.inject({ method: 'GET', url: `/billing/payments?cursor=${bad}`, headers: ws.owner.headers })
      t.equal(res.statusCode, 400)
      t.equal(res.json().code, 'INVALID_CURSOR')
    }
    const res = await app.inject({ method: 'GET', url: `/billing/payments?cursor=${good}`, headers: other.owner.headers })
    t.equal(res.statusCode, 400, "another workspace's cursor")
    t.equal(res.json().code, 'INVALID_CURSOR')
    for (const q of ['limit=0', 'limit=101', 'foo=1']) {
      const r = await app.inject({ method: 'GET', url: `/billing/payments?${q}`, headers: ws.owner.headers })
      t.equal(r.statusCode, 400, q)
      t.equal(r.json().code, 'VALIDATION_ERROR')
    }
  })

  await t.test('the billing routes are in the OpenAPI document', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/docs/json' })
    t.equal(res.statusCode, 200)
    const paths = Object.keys(res.json().paths)
    for (const p of ['/billing/webhooks/provider-a', '/billing/webhooks/provider-b', '/billing/subscription', '/billing/payments', '/billing/provider-a/return']) {
      t.ok(paths.includes(p), p)
    }
  })

  await t.test('the payments list is served by the (workspace_id, occurred_at, id) index', async (t) => {
    const plan = await app.deps.sql.begin(async (sql) => {
      await sql`SET LOCAL enable_seqscan = off`
      return sql`EXPLAIN SELECT id FROM payments WHERE workspace_id = ${ws.workspaceId}
        AND (occurred_at, id) < (now(), '00000000-0000-4000-8000-000000000000'::uuid) ORDER BY occurred_at DESC, id DESC LIMIT 21`
    })
    const text = plan.map((r) => r['QUERY PLAN']).join('\n')
    t.match(text, /Index (Only )?Scan Backward using payments_workspace_idx/)
    t.notMatch(text, /Sort/)
  })
})
