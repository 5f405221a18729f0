import { ImapFlow } from 'imapflow'
import { resultOf, type Area } from '../lib/area.js'
import { step } from '../lib/progress.js'
import { target } from '../lib/report.js'
import { memoryOf, sampleRss } from '../lib/server.js'
import { existsSync } from 'node:fs'
import { DOVECOT, rawMail, startDovecot } from '../../test/support/dovecot.js'

/**
 * Inbound e-mail (issue 29, docs/email.md): a private Dovecot, an e-mail channel of the largest
 * workspace created through the API, its reader ready; the channel is then paused (inactive:
 * its lease is dropped) while MAILS mails are appended (half new conversations from distinct
 * senders, half replies threaded by In-Reply-To), and switched on again. Ingest rate: imported
 * mails over the time between the first and the last imported message (database timestamps, so
 * the pause before the reader returns is not counted). The reference: the same mails fetched
 * with imapflow over one connection (`UID FETCH 1:* (UID BODY[])`, nothing else done). Targets:
 * ingest / raw fetch >= 0.5, and the API's highest RSS while ingesting < 300 MiB.
 */
const MAILS = Number(process.env.BENCH_EMAILS ?? 2000)
const ADDRESS = 'bench-support@example.test'

export const email: Area = {
  name: 'email',
  ids: [{ id: 'email-ingest', about: `${MAILS} mails appended to a Dovecot mailbox; mails→messages per second vs raw imapflow fetches per second; API RSS` }],
  async prepare(run, wanted) {
    if (!wanted('email-ingest')) return { scenarios: [] }
    // Dovecot is the tests' package (.ci/run installs it); without it the scenario says so instead of ending the run.
    if (!existsSync(DOVECOT)) {
      return { scenarios: [{ id: 'email-ingest', label: `e-mail ingest (${MAILS} mails)`, kind: 'write' as const, method: 'GET' as const, path: '/health', unavailable: `n/a (no ${DOVECOT}: apt-get install dovecot-imapd)` }] }
    }
    const { sql, api } = run
    let outcome: Record<string, number> = {}
    return {
      scenarios: [
        {
          id: 'email-ingest',
          label: `e-mail ingest (${MAILS} mails)`,
          kind: 'write' as const,
          method: 'GET' as const,
          path: '/health',
          measure: async () => {
            const dv = await startDovecot([{ user: ADDRESS, pass: 'bench' }])
            try {
              const imap = dv.imap()
              const res = await fetch(`${api.url}/channels`, {
                method: 'POST',
                headers: { ...run.headers.largest, 'content-type': 'application/json' },
                body: JSON.stringify({
                  name: 'Bench mail',
                  kind: 'email',
                  email: { address: ADDRESS, imap, smtp: { host: '127.0.0.1', port: 2525, secure: false, username: ADDRESS, password: 'bench' } },
                }),
              })
              if (res.status !== 201) throw new Error(`channel: ${res.status} ${await res.text()}`)
              const channelId = ((await res.json()) as { id: string }).id
              const ready = async () => {
                const [row] = await sql<{ lastUid: string | null; holder: string | null }[]>`SELECT last_uid AS "lastUid", holder FROM email_mailboxes WHERE channel_id = ${channelId}`
                return row?.lastUid != null && row.holder != null
              }
              for (let i = 0; !(await ready()); i++) {
                if (i > 300) throw new Error('the reader did not open the mailbox within 30 s')
                await new Promise((r) => setTimeout(r, 100))
              }
              // Paused: the next lease round drops the reader.
              await sql`UPDATE channels SET active = false WHERE id = ${channelId}`
              for (let i = 0; ; i++) {
                const [row] = await sql<{ holder: string | null }[]>`SELECT holder FROM email_mailboxes WHERE channel_id = ${channelId} AND lease_expires_at > now()`
                if (!row || i > 600) break
                // The lease stays until it expires; a paused channel is never claimed again, so wait for the drop.
                await new Promise((r) => setTimeout(r, 100))
              }
              step(`email-ingest: appending ${MAILS} mails`)
              const half = Math.floor(MAILS / 2)
              const raws: string[] = []
              const text = 'Hello,\n\nI have a question about my order. '.repeat(8)
              for (let i = 0; i < MAILS; i++) {
                const n = i < half ? i : i - half
                const headers: Record<string, string> = {
                  From: `"Customer ${n}" <customer${n}@customer.example>`,
                  To: ADDRESS,
                  Subject: i < half ? `Order ${n}` : `Re: Order ${n}`,
                  'Message-ID': `<bench-${i}@customer.example>`,
                }
                if (i >= half) headers['In-Reply-To'] = `<bench-${n}@customer.example>`
                const body = i < half ? text : `Thanks!\n\nOn Tue, Nov 24, 2026 at 3:04 PM Support <${ADDRESS}> wrote:\n> ${text}\n`
                raws.push(rawMail(headers, body))
              }
              await dv.appendMany(raws)
              // The API's RSS before the reader starts: the peak below is this plus what ingesting adds.
              const rssBeforeMb = memoryOf(api.pid)?.rss ?? 0
              const rss = sampleRss(api.pid)
              await sql`UPDATE channels SET active = true WHERE id = ${channelId}`
              step('email-ingest: the reader imports')
              const deadline = Date.now() + 15 * 60_000
              let imported = 0
              while (Date.now() < deadline) {
                const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM message_emails WHERE channel_id = ${channelId} AND direction = 'in'`
                imported = n
                if (n >= MAILS) break
                await new Promise((r) => setTimeout(r, 250))
              }
              const rssMb = rss.stop()
              const [span] = await sql<{ s: number }[]>`
                SELECT extract(epoch FROM max(m.created_at) - min(m.created_at))::float8 AS s
                FROM message_emails me JOIN messages m ON m.id = me.message_id WHERE me.channel_id = ${channelId}`
              const [threads] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE channel_id = ${channelId}`
              const ingestRate = (imported - 1) / Number(span!.s)

              step('email-ingest: the raw imapflow fetch of the same mails')
              const client = new ImapFlow({ host: imap.host, port: imap.port, secure: false, auth: { user: imap.username, pass: imap.password }, logger: false })
              await client.connect()
              const lock = await client.getMailboxLock('INBOX')
              const started = process.hrtime.bigint()
              let fetched = 0
              let bytes = 0
              try {
                for await (const m of client.fetch('1:*', { uid: true, source: true }, { uid: true })) {
                  fetched++
                  bytes += m.source?.length ?? 0
                }
              } finally {
                lock.release()
              }
              const rawSeconds = Number(process.hrtime.bigint() - started) / 1e9
              await client.logout()
              const rawRate = fetched / rawSeconds
              outcome = { mails: MAILS, imported, conversations: threads!.n, ingestPerSecond: ingestRate, rawFetchPerSecond: rawRate, ratio: ingestRate / rawRate, apiRssMb: rssMb, apiRssBeforeMb: rssBeforeMb, avgMailBytes: bytes / Math.max(1, fetched) }
              step(`email-ingest: ${JSON.stringify(outcome)}`)
              return {
                id: 'email-ingest',
                label: `e-mail ingest (${imported}/${MAILS} mails, ${threads!.n} conversations)`,
                kind: 'write' as const,
                status: imported === MAILS ? ('ok' as const) : ('error' as const),
                note: `ingest ${ingestRate.toFixed(1)} mails/s, raw imapflow fetch ${rawRate.toFixed(1)} mails/s, ratio ${(ingestRate / rawRate).toFixed(3)}`,
                rps: ingestRate,
                requests: imported,
                rssMb,
              }
            } finally {
              await dv.stop()
            }
          },
        },
      ],
      targets: (results) => [
        target('email-ingest mails→messages ÷ raw imapflow fetches', outcome.ratio, '>=', 0.5),
        target('email-ingest API RSS while ingesting', resultOf(results, 'email-ingest')?.rssMb, '<', 300, ' MiB'),
      ],
      report: async () => ({ data: { emailIngest: outcome } }),
    }
  },
}
