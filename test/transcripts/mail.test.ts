import t from 'tap'
import { build } from '../helper.js'
import { fast, fixture, freePort, requestStatus, startSmtp, waitFor } from './smtp.js'

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
  await new Promise((r) => setTimeout(r, 700))
  t.equal(smtp.mails.length, 1, 'exactly one mail')
  const [{ n }] = (await app.deps.sql`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'transcript-mail'`) as unknown as [{ n: number }]
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
    const [job] = await app.deps.jobs.boss.findJobs('transcript-mail', { id: jobId })
    return job && job.retryCount >= 1
  })
  t.equal(await requestStatus(app, jobId), 'queued')
  const smtp = await startSmtp(port)
  t.teardown(smtp.close)
  await waitFor(() => smtp.mails.length === 1, 20000)
  t.match(smtp.mails[0]!.text, /Hello, my order #123 never arrived/)
  await waitFor(async () => (await requestStatus(app, jobId)) === 'sent')
  await new Promise((r) => setTimeout(r, 700))
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
  await new Promise((r) => setTimeout(r, 700))
  t.equal(smtp.mails.length, 1, 'exactly once')
})
