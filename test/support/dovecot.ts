import { spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { ImapFlow } from 'imapflow'
import { freePort, waitFor } from './processes.js'

/** Debian's dovecot-imapd; .ci/run installs it when missing. The system service is never used. */
export const DOVECOT = '/usr/sbin/dovecot'

export interface MailUser {
  user: string
  pass: string
}

export interface Dovecot {
  host: string
  port: number
  /** What the server logged so far (it logs to stderr). */
  log(): string
  /** An IMAP mailbox login for a channel's `imap` settings (`secure: false`: no TLS on loopback). */
  imap(user?: MailUser): { host: string; port: number; secure: false; username: string; password: string }
  /** Places a raw RFC 5322 mail in the user's mailbox with IMAP APPEND; answers its UID. */
  append(raw: string | Buffer, user?: MailUser, mailbox?: string): Promise<number>
  /** Places many mails over one connection (the benchmark). */
  appendMany(raws: (string | Buffer)[], user?: MailUser, mailbox?: string): Promise<void>
  /** A logged-in client of its own (the caller logs it out). */
  client(user?: MailUser): Promise<ImapFlow>
  stop(): Promise<void>
}

/**
 * A private Dovecot IMAP server for tests: a temporary configuration (its own base_dir and
 * state_dir, so it never touches or needs the system service), IMAP on 127.0.0.1 at a free port,
 * plaintext login allowed (no TLS on loopback), a passwd-file user database with `users`, mail in
 * Maildir under the temp dir, logging to stderr. Dovecot refuses mail access as uid 0, so under
 * root the mail belongs to `nobody` (the temp dir is made traversable and the maildir chowned);
 * otherwise to the current user.
 */
export async function startDovecot(users: MailUser[] = [{ user: 'support@example.test', pass: 'secret' }]): Promise<Dovecot> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-dovecot-'))
  chmodSync(dir, 0o755)
  const mail = join(dir, 'mail')
  const base = join(dir, 'run')
  mkdirSync(mail)
  mkdirSync(base)
  const root = process.getuid?.() === 0
  const uid = root ? 65534 : process.getuid!()
  const gid = root ? 65534 : process.getgid!()
  if (root) chownSync(mail, uid, gid)
  const port = await freePort()
  writeFileSync(join(dir, 'users'), users.map((u) => `${u.user}:{PLAIN}${u.pass}::::::\n`).join(''))
  writeFileSync(
    join(dir, 'dovecot.conf'),
    `base_dir = ${base}
state_dir = ${join(base, 'state')}
instance_name = parley-test-${port}
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
log_path = /dev/stderr
info_log_path = /dev/stderr
mail_location = maildir:${mail}/%u
first_valid_uid = ${Math.max(1, uid)}
first_valid_gid = ${Math.max(1, gid)}
${root ? '' : `default_login_user = ${userInfo().username}\ndefault_internal_user = ${userInfo().username}\n`}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${join(dir, 'users')}
}
userdb {
  driver = static
  args = uid=${uid} gid=${gid} home=${mail}/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
`,
  )
  let output = ''
  const proc: ChildProcess = spawn(DOVECOT, ['-F', '-c', join(dir, 'dovecot.conf')], { stdio: ['ignore', 'pipe', 'pipe'] })
  const keep = (b: Buffer) => {
    output += b.toString()
    if (output.length > 200_000) output = output.slice(-100_000)
  }
  proc.stdout!.on('data', keep)
  proc.stderr!.on('data', keep)
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          if (proc.exitCode !== null) throw new Error(`dovecot exited: ${output}`)
          const s = connect(port, '127.0.0.1')
          s.once('data', (d) => {
            s.destroy()
            resolve(d.toString().startsWith('* OK'))
          })
          s.once('error', () => resolve(false))
        }),
      15_000,
      100,
    )
  } catch (err) {
    await stop()
    throw new Error(`dovecot did not start: ${(err as Error).message}\n${output}`)
  }
  const first = users[0]!
  const client = async (u: MailUser = first) => {
    const c = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user: u.user, pass: u.pass }, logger: false })
    await c.connect()
    return c
  }
  return {
    host: '127.0.0.1',
    port,
    log: () => output,
    imap: (u = first) => ({ host: '127.0.0.1', port, secure: false, username: u.user, password: u.pass }),
    async append(raw, u = first, mailbox = 'INBOX') {
      const c = await client(u)
      try {
        const r = await c.append(mailbox, raw)
        if (!r || !r.uid) throw new Error('APPEND gave no UID')
        return r.uid
      } finally {
        await c.logout().catch(() => {})
      }
    },
    async appendMany(raws, u = first, mailbox = 'INBOX') {
      const c = await client(u)
      try {
        for (const raw of raws) await c.append(mailbox, raw)
      } finally {
        await c.logout().catch(() => {})
      }
    },
    client,
    stop,
  }
}

/** A plain mail for tests: the headers given (Message-ID and Date filled in when absent) and a text body. */
export function rawMail(headers: Record<string, string>, body: string): string {
  const h: Record<string, string> = {
    'Message-ID': `<${Math.random().toString(36).slice(2)}.${Date.now()}@mail.example.test>`,
    Date: new Date().toUTCString(),
    'MIME-Version': '1.0',
    'Content-Type': 'text/plain; charset=utf-8',
    ...headers,
  }
  return `${Object.entries(h)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n${body.replace(/\r?\n/g, '\r\n')}\r\n`
}
