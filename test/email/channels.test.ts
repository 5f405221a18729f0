// E-mail channel settings (API.md section 19): create, PATCH (named fields replace, passwords
// write-only and kept), encryption at rest, the check route, 400s.
import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { freePort, startSmtp } from '../transcripts/smtp.js'
import { checkImap } from '../../src/email/check.js'
import { channelMailSettings, decryptSecret, encryptSecret } from '../../src/email/secrets.js'

const emailBody = (smtpPort = 2525, imapPort = 1143) => ({
  address: 'Support@Shop.Example',
  fromName: 'Shop Support',
  imap: { host: '127.0.0.1', port: imapPort, secure: false, username: 'support', password: 'imap-pass-S3cret' },
  smtp: { host: '127.0.0.1', port: smtpPort, secure: false, username: 'support', password: 'smtp-pass-S3cret' },
})

t.test('create and patch an e-mail channel', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const h = ws.admin.headers
  const res = await app.inject({ method: 'POST', url: '/channels', headers: h, payload: { name: 'Mail', kind: 'email', email: emailBody() } })
  t.equal(res.statusCode, 201, res.body)
  const ch = res.json()
  t.equal(ch.kind, 'email')
  t.same(ch.email, {
    address: 'support@shop.example',
    fromName: 'Shop Support',
    imap: { host: '127.0.0.1', port: 1143, secure: false, username: 'support', mailbox: 'INBOX', password: null },
    smtp: { host: '127.0.0.1', port: 2525, secure: false, username: 'support', password: null },
    status: { state: 'ok', error: null, lastSyncAt: null },
  }, 'address lower-cased, mailbox INBOX by default, passwords null')
  t.notOk(res.body.includes('S3cret'), 'no password in the answer')

  await t.test('passwords are encrypted at rest', async (t) => {
    const [row] = await app.deps.sql<{ email: object; i: string; s: string }[]>`
      SELECT email, email_imap_password AS i, email_smtp_password AS s FROM channels WHERE id = ${ch.id}`
    const all = JSON.stringify(row)
    t.notOk(all.includes('S3cret'), 'no plaintext password in the row')
    t.match(row!.i, /^v1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/)
    t.not(row!.i, row!.s)
    const s = await channelMailSettings(app.deps.sql, app.deps.config, ch.id)
    t.equal(s!.imap.password, 'imap-pass-S3cret')
    t.equal(s!.smtp.password, 'smtp-pass-S3cret')
    t.equal(s!.workspaceName, 'Acme')
    // Bound to its channel and field: a copied ciphertext does not decrypt.
    const key = Buffer.from(app.deps.config.CHANNEL_SECRET_KEY!, 'base64')
    t.throws(() => decryptSecret(key, ch.id, 'smtp', row!.i), 'the IMAP ciphertext is not the SMTP password')
    t.throws(() => decryptSecret(key, ws.channelId, 'imap', row!.i), 'nor another channel’s')
    t.throws(() => decryptSecret(Buffer.alloc(32, 1), ch.id, 'imap', row!.i), 'nor under another key')
    t.equal(decryptSecret(key, 'x', 'imap', encryptSecret(key, 'x', 'imap', 'é ü 🔑')), 'é ü 🔑', 'round trip')
  })

  await t.test('PATCH replaces the fields it names, keeps the others and the passwords', async (t) => {
    const r = await app.inject({
      method: 'PATCH',
      url: `/channels/${ch.id}`,
      headers: h,
      payload: { email: { fromName: null, imap: { port: 993, secure: true, mailbox: 'Support' } } },
    })
    t.equal(r.statusCode, 200, r.body)
    t.same(r.json().email.imap, { host: '127.0.0.1', port: 993, secure: true, username: 'support', mailbox: 'Support', password: null })
    t.equal(r.json().email.fromName, null)
    t.equal(r.json().email.address, 'support@shop.example')
    t.same(r.json().email.smtp, ch.email.smtp)
    let s = await channelMailSettings(app.deps.sql, app.deps.config, ch.id)
    t.same([s!.imap.password, s!.smtp.password], ['imap-pass-S3cret', 'smtp-pass-S3cret'], 'passwords kept')
    const r2 = await app.inject({ method: 'PATCH', url: `/channels/${ch.id}`, headers: h, payload: { email: { smtp: { password: 'new-smtp-pass' } }, name: 'Mailbox' } })
    t.equal(r2.statusCode, 200)
    t.equal(r2.json().email.smtp.password, null)
    t.equal(r2.json().name, 'Mailbox')
    s = await channelMailSettings(app.deps.sql, app.deps.config, ch.id)
    t.same([s!.imap.password, s!.smtp.password], ['imap-pass-S3cret', 'new-smtp-pass'], 'only the named password replaced')
    const list = (await app.inject({ method: 'GET', url: '/channels', headers: ws.agent.headers })).json()
    const listed = list.data.find((c: { id: string }) => c.id === ch.id)
    t.equal(listed.email.imap.password, null, 'GET /channels shows the settings, no password')
    t.notOk(list.data.find((c: { id: string }) => c.id === ws.channelId).email, 'a web channel has no email')
  })

  await t.test('two PATCHes naming different fields both apply', async (t) => {
    const [a, b] = await Promise.all([
      app.inject({ method: 'PATCH', url: `/channels/${ch.id}`, headers: h, payload: { email: { imap: { port: 1993 } } } }),
      app.inject({ method: 'PATCH', url: `/channels/${ch.id}`, headers: h, payload: { email: { smtp: { port: 1587 } } } }),
    ])
    t.same([a.statusCode, b.statusCode], [200, 200])
    const s = await channelMailSettings(app.deps.sql, app.deps.config, ch.id)
    t.same([s!.imap.port, s!.smtp.port], [1993, 1587])
  })

  await t.test('400s and 403s', async (t) => {
    const bad: [object, RegExp][] = [
      [{ name: 'M', kind: 'email' }, /email.*required/],
      [{ name: 'M', email: emailBody() }, /only for kind/],
      [{ name: 'M', kind: 'fax' }, /kind/],
      [{ name: 'M', kind: 'email', email: { ...emailBody(), address: 'not-an-address' } }, /address/],
      [{ name: 'M', kind: 'email', email: { ...emailBody(), imap: { ...emailBody().imap, port: 0 } } }, /port/],
      [{ name: 'M', kind: 'email', email: { ...emailBody(), smtp: { ...emailBody().smtp, password: '' } } }, /password/],
      [{ name: 'M', kind: 'email', email: { ...emailBody(), imap: { ...emailBody().imap, host: 'http://x/y' } } }, /host/],
      [{ name: 'M', kind: 'email', email: { ...emailBody(), smtp: { ...emailBody().smtp, extra: 1 } } }, /extra/],
      [{ name: 'M', kind: 'email', email: { ...emailBody(), imap: { host: 'x', port: 1, secure: false, username: 'u' } } }, /password/],
    ]
    for (const [payload, message] of bad) {
      const r = await app.inject({ method: 'POST', url: '/channels', headers: h, payload })
      t.same([r.statusCode, r.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(payload))
      t.match(r.json().message, message)
    }
    const patches: [string, object, RegExp][] = [
      [ws.channelId, { email: { address: 'a@b.example' } }, /only for e-mail channels/],
      [ch.id, { kind: 'web' }, /kind/],
      [ch.id, { email: {} }, /email/],
      [ch.id, { email: { imap: { password: '' } } }, /password/],
      [ch.id, { email: { smtp: { port: 70000 } } }, /port/],
    ]
    for (const [id, payload, message] of patches) {
      const r = await app.inject({ method: 'PATCH', url: `/channels/${id}`, headers: h, payload })
      t.same([r.statusCode, r.json().code], [400, 'VALIDATION_ERROR'], JSON.stringify(payload))
      t.match(r.json().message, message)
    }
    const agent = await app.inject({ method: 'POST', url: '/channels', headers: ws.agent.headers, payload: { name: 'M', kind: 'email', email: emailBody() } })
    t.equal(agent.statusCode, 403)
    const other = await seedWorkspace(app, 'Other')
    const foreign = await app.inject({ method: 'PATCH', url: `/channels/${ch.id}`, headers: other.admin.headers, payload: { email: { fromName: 'X' } } })
    t.equal(foreign.statusCode, 404, "another workspace's channel is not found")
    const check = await app.inject({ method: 'POST', url: `/channels/${ch.id}/email/check`, headers: other.admin.headers })
    t.equal(check.statusCode, 404)
    const web = await app.inject({ method: 'POST', url: `/channels/${ws.channelId}/email/check`, headers: h })
    t.same([web.statusCode, web.json().code], [400, 'VALIDATION_ERROR'], 'a web channel has nothing to check')
    const agentCheck = await app.inject({ method: 'POST', url: `/channels/${ch.id}/email/check`, headers: ws.agent.headers })
    t.equal(agentCheck.statusCode, 403)
  })
})

t.test('the check route logs in to both servers and sets email.status', async (t) => {
  const smtp = await startSmtp(0, { auth: { user: 'support', pass: 'smtp-pass-S3cret' } })
  t.teardown(() => smtp.close())
  const closedPort = await freePort()
  const { app, rawLog } = await build(t, { captureLogs: true })
  const ws = await seedWorkspace(app)
  const h = ws.admin.headers
  const ch = (await app.inject({ method: 'POST', url: '/channels', headers: h, payload: { name: 'Mail', kind: 'email', email: emailBody(smtp.port, closedPort) } })).json()

  const started = Date.now()
  const res = await app.inject({ method: 'POST', url: `/channels/${ch.id}/email/check`, headers: h })
  t.equal(res.statusCode, 200, res.body)
  t.ok(Date.now() - started < 15000, 'answered within 15 s')
  t.equal(res.json().smtp, 'ok', 'SMTP login accepted')
  t.match(res.json().imap, /ECONNREFUSED/, 'the IMAP refusal as a string')
  const after = (await app.inject({ method: 'GET', url: '/channels', headers: h })).json().data.find((c: { id: string }) => c.id === ch.id)
  t.equal(after.email.status.state, 'error')
  t.match(after.email.status.error, /^imap: .*ECONNREFUSED/)

  // A wrong SMTP password: the server's refusal.
  await app.inject({ method: 'PATCH', url: `/channels/${ch.id}`, headers: h, payload: { email: { smtp: { password: 'wrong' } } } })
  const wrong = (await app.inject({ method: 'POST', url: `/channels/${ch.id}/email/check`, headers: h })).json()
  t.match(wrong.smtp, /Invalid username or password|auth/i)
  // A server that accepts the connection and says nothing: the check still answers in time.
  const net = await import('node:net')
  const silent = net.createServer(() => {})
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => silent.close())
  const silentPort = (silent.address() as { port: number }).port
  const t0 = Date.now()
  const timedOut = await checkImap({ imap: { host: '127.0.0.1', port: silentPort, secure: false, username: 'u', password: 'p', mailbox: 'INBOX' } }, 1500)
  t.ok(Date.now() - t0 < 5000, 'a silent server is given up on')
  t.not(timedOut, 'ok')
  t.notOk(rawLog().includes('S3cret') || rawLog().includes('smtp-pass') || rawLog().includes('wrong'), 'no password in the log')
})

t.test('without CHANNEL_SECRET_KEY e-mail channels answer 503 NOT_CONFIGURED', async (t) => {
  const { app } = await build(t, { env: { CHANNEL_SECRET_KEY: undefined } })
  const ws = await seedWorkspace(app)
  const r = await app.inject({ method: 'POST', url: '/channels', headers: ws.admin.headers, payload: { name: 'Mail', kind: 'email', email: emailBody() } })
  t.same([r.statusCode, r.json().code], [503, 'NOT_CONFIGURED'])
  const web = await app.inject({ method: 'POST', url: '/channels', headers: ws.admin.headers, payload: { name: 'Web' } })
  t.equal(web.statusCode, 201, 'web channels are unaffected')
})

t.test('CHANNEL_SECRET_KEY must be 32 bytes in base64; the error names the variable, never the value', async (t) => {
  const { loadConfig } = await import('../../src/config.js')
  const { testEnv } = await import('../helper.js')
  for (const bad of ['c2hvcnQtYnV0LXNlY3JldA==', Buffer.alloc(33, 9).toString('base64'), 'not base64 at all, not even close!!!!!!!!!!!!']) {
    t.throws(() => loadConfig(testEnv({ CHANNEL_SECRET_KEY: bad })), { message: /^Invalid configuration: CHANNEL_SECRET_KEY must be 32 bytes in base64/ })
    try {
      loadConfig(testEnv({ CHANNEL_SECRET_KEY: bad }))
    } catch (err) {
      t.notOk((err as Error).message.includes(bad), 'the value is not repeated')
    }
  }
  t.equal(loadConfig(testEnv({ CHANNEL_SECRET_KEY: Buffer.alloc(32, 1).toString('base64url') })).CHANNEL_SECRET_KEY?.length, 43, 'base64url is accepted')
})
