import { createServer } from 'node:net'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export interface TestSmtp {
  port: number
  mails: (ParsedMail & { envelopeTo: string[] })[]
  close(): Promise<void>
}

/** A real SMTP server on 127.0.0.1 (smtp-server) that parses what it receives (mailparser). */
export async function startSmtp(port = 0): Promise<TestSmtp> {
  const mails: TestSmtp['mails'] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
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

/** A loopback port nobody listens on (yet). */
export async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', () => resolve()))
  const address = srv.address()
  const port = typeof address === 'object' && address ? address.port : 0
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  return port
}

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
