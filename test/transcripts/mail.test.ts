import { simpleParser } from 'mailparser'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { seedConversation, seedMessages } from '../search/seed.js'
import { freePort, startSmtp, waitFor } from './smtp.js'

/** Short retries and polling so the outage and restart cases finish in seconds. */
const fast = {
  JOBS_POLL_INTERVAL_S: '0.5',
  TRANSCRIPT_RETRY_DELAY_S: '1',
  TRANSCRIPT_RETRY_DELAY_MAX_S: '1',
  SMTP_TIMEOUT_MS: '2000',
}

async function requestStatus(app: { sql: import('postgres').Sql }, id: string): Promise<string | undefined> {
  const [row] = await app.sql<{ status: string }[]>`SELECT status FROM transcript_requests WHERE id = ${id}`
  return row?.status
}

async function fixture(app: Parameters<typeof seedWorkspace>[0]) {
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws, 'Gina Guest', 'gina@example.test')
  const conv = await seedConversation(app, ws, guest)
  await seedMessages(app, conv, [
    { body: 'Hello, my order #123 never arrived' },
    { body: 'Sorry! I am checking <b>now</b>', senderType: 'AGENT', senderName: 'Agnes Agent' },
    { body: 'Thanks <script>alert(1)</script>' },
  ])
  return { ws, guest, conv }
}

t.test('a member mails the transcript: it arrives over SMTP, rendered from the database', async (t) => {
  const smtp = await startSmtp()
  t.teardown(smtp.close)
  const { app } = await build(t, { env: { ...fast, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Parley <support@parley.test>' } })
  const { ws, conv } = await fixture(app)

  const res = await app.inject({ method: 'POST', url: `/conversations/${conv}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.equal(body.queued, true)
  t.match(body.jobId, /^[0-9a-f-]{36}$/)

  await waitFor(() => smtp.mails.length === 1)
  const mail = smtp.mails[0]!
  t.same(mail.envelopeTo, ['gina@example.test'], "default address: the guest's")
  t.match(mail.from?.text, /support@parley\.test/)
  t.match(mail.text, /Gina Guest \(guest\): Hello, my order #123 never arrived/)
  t.match(mail.text, /Agnes Agent \(agent\): Sorry! I am checking <b>now<\/b>/)
  t.ok(typeof mail.html === 'string' && mail.html.includes('Thanks &#60;script&#62;alert(1)&#60;/script&#62;'), 'html part escaped')
  t.notOk(String(mail.html).includes('<script>'))
  t.equal(mail.messageId, `<transcript-${body.jobId}@parley.invalid>`)
  await waitFor(async () => (await requestStatus(app, body.jobId)) === 'sent')

  // A member may name another address.
  const other = await app.inject({
    method: 'POST',
    url: `/conversations/${conv}/transcript`,
    headers: ws.owner.headers,
    payload: { email: 'boss@example.test' },
  })
  t.equal(other.statusCode, 200)
  await waitFor(() => smtp.mails.length === 2)
  t.same(smtp.mails[1]!.envelopeTo, ['boss@example.test'])
})

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

  const [row] = await app.sql`SELECT email, requested_by, status FROM transcript_requests WHERE id = ${own.json().jobId}`
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

  const [{ n }] = (await app.sql`SELECT count(*)::int AS n FROM transcript_requests`) as unknown as [{ n: number }]
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

t.test('a retried request sends one mail', async (t) => {
  const smtp = await startSmtp()
  t.teardown(smtp.close)
  const { app } = await build(t, { env: { ...fast, SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } })
  const { ws, conv } = await fixture(app)
  const send = () =>
    app.inject({ method: 'POST', url: `/conversations/${conv}/transcript`, headers: ws.agent.headers, payload: { email: 'me@example.test' } })
  const [a, b] = await Promise.all([send(), send()])
  t.equal(a.statusCode, 200)
  t.equal(b.statusCode, 200)
  t.equal(a.json().jobId, b.json().jobId, 'concurrent duplicates: one job')
  await waitFor(async () => (await requestStatus(app, a.json().jobId)) === 'sent')
  const c = await send()
  t.equal(c.json().jobId, a.json().jobId, 'a retry after the mail went out (within the window): the same job')
  await new Promise((r) => setTimeout(r, 1500))
  t.equal(smtp.mails.length, 1, 'exactly one mail')
  const [{ n }] = (await app.sql`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'transcript-mail'`) as unknown as [{ n: number }]
  t.equal(n, 1, 'one job')
})

t.test('SMTP down at first: the mail arrives once it comes up', async (t) => {
  const port = await freePort()
  const { app } = await build(t, { env: { ...fast, SMTP_URL: `smtp://127.0.0.1:${port}` } })
  const { ws, conv } = await fixture(app)
  const res = await app.inject({ method: 'POST', url: `/conversations/${conv}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(res.statusCode, 200)
  const jobId = res.json().jobId
  // Wait until an attempt has failed and the job is waiting to retry.
  await waitFor(async () => {
    const [job] = await app.jobs.boss.findJobs('transcript-mail', { id: jobId })
    return job && job.retryCount >= 1
  })
  t.equal(await requestStatus(app, jobId), 'queued')
  const smtp = await startSmtp(port)
  t.teardown(smtp.close)
  await waitFor(() => smtp.mails.length === 1, 20000)
  t.match(smtp.mails[0]!.text, /Hello, my order #123 never arrived/)
  await waitFor(async () => (await requestStatus(app, jobId)) === 'sent')
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(smtp.mails.length, 1, 'sent once')
})

t.test('a restart between enqueue and send loses nothing and sends once', async (t) => {
  const smtp = await startSmtp()
  t.teardown(smtp.close)
  const env = { ...fast, SMTP_URL: `smtp://127.0.0.1:${smtp.port}` }
  // App A accepts the request but runs no worker (it stops before sending).
  const a = await build(t, { env: { ...env, JOBS_WORKER: 'false' } })
  const { ws, conv } = await fixture(a.app)
  const res = await a.app.inject({ method: 'POST', url: `/conversations/${conv}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(res.statusCode, 200)
  const jobId = res.json().jobId
  await a.app.close()
  t.equal(smtp.mails.length, 0)

  // App B on the same database picks the job up.
  const b = await build(t, { env, databaseUrl: a.databaseUrl })
  await waitFor(() => smtp.mails.length === 1)
  t.match(smtp.mails[0]!.text, /Thanks <script>alert\(1\)<\/script>/)
  await waitFor(async () => (await requestStatus(b.app, jobId)) === 'sent')
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(smtp.mails.length, 1, 'exactly once')
})

t.test('without SMTP_URL the mail is written to the log', async (t) => {
  const { app, logs } = await build(t, { env: { ...fast, SMTP_URL: undefined }, captureLogs: true })
  const { ws, conv } = await fixture(app)
  const res = await app.inject({ method: 'POST', url: `/conversations/${conv}/transcript`, headers: ws.agent.headers, payload: {} })
  t.equal(res.statusCode, 200)
  const line = await waitFor(() => logs.find((l) => (l as { mail?: unknown }).mail))
  const mail = (line as unknown as { mail: { to: string; raw: string } }).mail
  t.equal(mail.to, 'gina@example.test')
  const parsed = await simpleParser(mail.raw)
  t.match(parsed.text, /Gina Guest \(guest\): Hello, my order #123 never arrived/)
  await waitFor(async () => (await requestStatus(app, res.json().jobId)) === 'sent')
})
