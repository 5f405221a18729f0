import { createHash } from 'node:crypto'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { seedConversation } from '../search/seed.js'
import { fast, fixture, requestStatus, waitFor } from './smtp.js'

t.test('visitor rules, validation and tenancy', async (t) => {
  const { app } = await build(t, { env: { JOBS_WORKER: 'false' } })
  const { ws, guest, conv } = await fixture(app)
  const url = `/conversations/${conv}/transcript`

  const elsewhere = await app.inject({ method: 'POST', url, headers: guest.headers, payload: { email: 'someone@else.test' } })
  t.equal(elsewhere.statusCode, 403)
  t.equal(elsewhere.json().code, 'FORBIDDEN')

  const own = await app.inject({ method: 'POST', url, headers: guest.headers, payload: { email: 'GINA@example.test' } })
  t.equal(own.statusCode, 200, "a visitor may name its own guest's address (any case)")
  const noBody = await app.inject({ method: 'POST', url, headers: guest.headers })
  t.equal(noBody.statusCode, 200, 'no body: the guest address')
  t.equal(noBody.json().jobId, own.json().jobId, 'the same request again: the same job')

  const [row] = await app.deps.sql`SELECT email, requested_by, status FROM transcript_requests WHERE id = ${own.json().jobId}`
  t.match(row, { email: 'gina@example.test', requested_by: `guest:${guest.guestId}`, status: 'queued' })

  const unknown = await app.inject({ method: 'POST', url, headers: ws.agent.headers, payload: { email: 'a@b.test', to: 'x' } })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json().message, /to/)
  const invalid = await app.inject({ method: 'POST', url, headers: ws.agent.headers, payload: { email: 'not an address' } })
  t.equal(invalid.statusCode, 400)
  t.equal(invalid.json().code, 'VALIDATION_ERROR')
  const header = await app.inject({
    method: 'POST',
    url,
    headers: ws.agent.headers,
    payload: { email: 'a@b.test\r\nBcc: victim@example.test' },
  })
  t.equal(header.statusCode, 400, 'no header injection through the address')

  const otherGuest = await seedGuest(app, ws, 'Other')
  const foreign = await app.inject({ method: 'POST', url, headers: otherGuest.headers, payload: {} })
  t.equal(foreign.statusCode, 404)
  const ws2 = await seedWorkspace(app, 'Other Co')
  const tenant = await app.inject({ method: 'POST', url, headers: ws2.owner.headers, payload: { email: 'x@y.test' } })
  t.equal(tenant.statusCode, 404)
  t.equal(tenant.json().code, 'CONVERSATION_NOT_FOUND')
  const anon = await app.inject({ method: 'POST', url, payload: {} })
  t.equal(anon.statusCode, 401)

  // A guest without an address: the member must name one.
  const silent = await seedGuest(app, ws, 'No Mail', '')
  const conv2 = await seedConversation(app, ws, silent)
  const none = await app.inject({ method: 'POST', url: `/conversations/${conv2}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(none.statusCode, 400)
  t.equal(none.json().code, 'EMAIL_REQUIRED')

  const [{ n }] = (await app.deps.sql`SELECT count(*)::int AS n FROM transcript_requests`) as unknown as [{ n: number }]
  t.equal(n, 1, 'refused requests left no rows')
})

t.test('rate limit per conversation: 429 with Retry-After', async (t) => {
  const { app } = await build(t, { env: { JOBS_WORKER: 'false', TRANSCRIPT_RATE_LIMIT_PER_HOUR: '2' } })
  const { ws, conv } = await fixture(app)
  const url = `/conversations/${conv}/transcript`
  for (const email of ['a@x.test', 'b@x.test']) {
    const ok = await app.inject({ method: 'POST', url, headers: ws.agent.headers, payload: { email } })
    t.equal(ok.statusCode, 200)
  }
  const limited = await app.inject({ method: 'POST', url, headers: ws.agent.headers, payload: { email: 'c@x.test' } })
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().code, 'RATE_LIMITED')
  const retryAfter = Number(limited.headers['retry-after'])
  t.ok(retryAfter > 3500 && retryAfter <= 3600, `Retry-After ${retryAfter}`)
  // A retry of an accepted request is not a new request: not limited, same job.
  const again = await app.inject({ method: 'POST', url, headers: ws.agent.headers, payload: { email: 'a@x.test' } })
  t.equal(again.statusCode, 200)
  // Another conversation has its own budget.
  const conv2 = await seedConversation(app, ws, await seedGuest(app, ws, 'Second', 'second@example.test'))
  const second = await app.inject({ method: 'POST', url: `/conversations/${conv2}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(second.statusCode, 200)
  // Concurrent requests cannot overshoot the limit.
  const conv3 = await seedConversation(app, ws, await seedGuest(app, ws, 'Third', 'third@example.test'))
  const burst = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      app.inject({ method: 'POST', url: `/conversations/${conv3}/transcript`, headers: ws.agent.headers, payload: { email: `p${i}@x.test` } }),
    ),
  )
  t.same(burst.map((r) => r.statusCode).sort(), [200, 200, 429, 429, 429, 429])
})

t.test('without SMTP_URL only a summary of the mail is logged: no body, no address', async (t) => {
  const { app, logs, rawLog } = await build(t, { env: { ...fast, SMTP_URL: undefined }, captureLogs: true })
  const { ws, conv } = await fixture(app)
  const res = await app.inject({ method: 'POST', url: `/conversations/${conv}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(res.statusCode, 200)
  await waitFor(async () => (await requestStatus(app, res.json().jobId)) === 'sent')
  const lines = logs.filter((l) => l.msg === 'mail (no SMTP_URL: logged, not sent)')
  t.equal(lines.length, 1, 'one line for the mail')
  const mail = (lines[0] as unknown as { mail: Record<string, unknown> }).mail
  t.same(Object.keys(mail).sort(), ['bytes', 'kind', 'messageId', 'to'], 'a summary: nothing else')
  t.equal(mail.kind, 'transcript')
  t.equal(mail.to, createHash('sha256').update('gina@example.test').digest('hex').slice(0, 12), "the guest's address as a hash")
  t.ok(Number(mail.bytes) > 1000, `its size (${String(mail.bytes)} bytes: rendered, text and html)`)
  const log = rawLog()
  for (const secret of ['gina@example.test', 'Gina Guest', 'order #123', 'Agnes Agent', 'Transcript of your conversation']) {
    t.notOk(log.includes(secret), `"${secret}" is not in the log`)
  }
})

t.test('Idempotency-Key: the same key is the same request, whenever it is retried', async (t) => {
  // No content window: only the key can make two calls one request here.
  const { app } = await build(t, { env: { JOBS_WORKER: 'false', TRANSCRIPT_DEDUPE_WINDOW_S: '0' } })
  const { ws, guest, conv } = await fixture(app)
  const url = `/conversations/${conv}/transcript`
  const post = (key: string | undefined, payload: object, headers = ws.agent.headers) =>
    app.inject({ method: 'POST', url, headers: { ...headers, ...(key ? { 'idempotency-key': key } : {}) }, payload })

  const a = await post('key-1', { email: 'x@example.test' })
  t.equal(a.statusCode, 200)
  await app.deps.sql`UPDATE transcript_requests SET status = 'sent', created_at = now() - interval '2 hours'`
  const replay = await post('key-1', { email: 'X@example.test' })
  t.equal(replay.statusCode, 200)
  t.equal(replay.json().jobId, a.json().jobId, 'same key, hours later: same job')
  const reused = await post('key-1', { email: 'other@example.test' })
  t.equal(reused.statusCode, 409)
  t.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED')
  const b = await post('key-2', { email: 'x@example.test' })
  t.not(b.json().jobId, a.json().jobId, 'another key: another request')
  // Keys are per caller: the visitor's key-1 is its own request.
  const v = await post('key-1', {}, guest.headers)
  t.equal(v.statusCode, 200)
  t.not(v.json().jobId, a.json().jobId)
  const tooLong = await post('k'.repeat(256), {})
  t.equal(tooLong.statusCode, 400)
  const [{ n }] = (await app.deps.sql`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'transcript-mail'`) as unknown as [{ n: number }]
  t.equal(n, 3, 'one job per request')
})
