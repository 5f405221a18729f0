import { seedGuest, seedWorkspace } from '../helper.js'
import type { App } from '../../src/app.js'
import { seedConversation, seedMessages } from '../search/seed.js'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export interface TestSmtp {
  port: number
  mails: (ParsedMail & { envelopeTo: string[] })[]
  close(): Promise<void>
}

/**
 * A real SMTP server on 127.0.0.1 (smtp-server) that parses what it receives (mailparser). With
 * `auth`, it offers AUTH PLAIN/LOGIN without TLS and accepts only that user and password (e-mail
 * channels log in).
 */
export async function startSmtp(
  port = 0,
  opts: { auth?: { user: string; pass: string }; /** Refuses these recipients with 550. */ rejectRcpt?: string[] } = {},
): Promise<TestSmtp> {
  const mails: TestSmtp['mails'] = []
  const auth = opts.auth
  const server = new SMTPServer({
    authOptional: !auth,
    disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    allowInsecureAuth: true,
    onAuth(a, _session, callback) {
      if (auth && a.username === auth.user && a.password === auth.pass) return callback(null, { user: a.username })
      return callback(new Error('Invalid username or password'))
    },
    onRcptTo(address, _session, callback) {
      if (opts.rejectRcpt?.includes(address.address)) {
        return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }))
      }
      return callback()
    },
    logger: false,
    size: 50 * 1024 * 1024,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail) => {
          mails.push(Object.assign(mail, { envelopeTo: session.envelope.rcptTo.map((r) => r.address) }))
          callback()
        })
        .catch(callback)
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  const address = server.server.address()
  return {
    port: typeof address === 'object' && address ? address.port : port,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export { freePort } from '../support/processes.js'

/** Polls `check` until it returns a truthy value or the time is up. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 15000, stepMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, stepMs))
  }
}

/** Short retries and polling so the outage and restart cases finish in seconds. */
export const fast = {
  JOBS_POLL_INTERVAL_S: '0.5',
  TRANSCRIPT_RETRY_DELAY_S: '1',
  TRANSCRIPT_RETRY_DELAY_MAX_S: '1',
  SMTP_TIMEOUT_MS: '2000',
}

export async function requestStatus(app: App, id: string): Promise<string | undefined> {
  const [row] = await app.deps.sql<{ status: string }[]>`SELECT status FROM transcript_requests WHERE id = ${id}`
  return row?.status
}

export async function fixture(app: Parameters<typeof seedWorkspace>[0]) {
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
