import { randomBytes } from 'node:crypto'
import type { ImapFlow } from 'imapflow'
import type { Config } from '../config.js'
import type { Deps } from '../context.js'
import { importBatch, parseBatch, type FetchedMail, type ParsedBatch, type ReaderPlace } from './inbound.js'
import { channelMailSettings, type ChannelMailSettings } from './secrets.js'
import { mailErrorText } from './transport.js'

/**
 * E-mail channels' mailbox readers (API.md section 19, docs/email.md "The lease"). Every API
 * process with JOBS_WORKER runs one MailReaders; the database decides which process reads which
 * mailbox, one at a time:
 *
 * - A lease row per channel (`email_mailboxes`: holder, lease_expires_at), claimed with one
 *   UPDATE that takes rows that are free, expired or already ours, and renewed by the same
 *   statement every EMAIL_POLL_MS (at most a third of EMAIL_LEASE_MS). A process that stops
 *   cleanly releases its leases; a killed one's expire after EMAIL_LEASE_MS and the next round of
 *   any other process takes them (EMAIL_LEASE_MS + EMAIL_POLL_MS: 38 s by default, within the
 *   contract's 60). Not a session advisory lock: it would die with a connection rather than with
 *   the process, and does not survive PgBouncer's transaction pooling (API.md section 20).
 * - Fencing: an import commits only while its process holds an unexpired lease on the same
 *   mailbox generation (advancePlace, in the import's transaction), so a paused or partitioned
 *   former holder can never import after a takeover. A holder whose renewal fails stops reading.
 * - The place (UIDVALIDITY, last UID) moves in each import's own transaction (a batch of mails
 *   commits whole or not at all): a restart or a takeover resumes after the last committed mail;
 *   a mail seen twice is stored once (Message-ID).
 */
export interface MailReaders {
  /** Starts the lease rounds (the API process with JOBS_WORKER). */
  start(): void
  /** Stops reading and releases this process's leases. */
  stop(): Promise<void>
  /** One lease round now (tests). */
  round(): Promise<void>
  /** The channels this process reads now. */
  held(): string[]
  readonly holder: string
}

/** IMAP fetches this many mails' sources at a time, imported in one transaction (importBatch). */
export const FETCH_BATCH = 100
/** ... and at most this many bytes of them (a larger mail is a batch of its own): memory holds one batch. */
export const FETCH_BATCH_BYTES = 8 * 1024 * 1024
/** Mails larger than this are fetched cut to it: their text and headers, no original.eml (over 25 MiB anyway). */
export const FETCH_MAX_BYTES = 26 * 1024 * 1024

export function createMailReaders(config: Config, depsOf: () => Deps): MailReaders {
  const holder = `${process.pid}-${randomBytes(6).toString('hex')}`
  const readers = new Map<string, MailboxReader>()
  const roundMs = Math.min(config.EMAIL_POLL_MS, Math.floor(config.EMAIL_LEASE_MS / 3))
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> | null = null
  let stopped = false
  // Local deadline: with no renewal confirmed by then, this process stops reading (the lease may be gone).
  let renewedUntil = 0

  const round = async () => {
    const deps = depsOf()
    let claimed: string[]
    try {
      claimed = await claim(deps, holder, config.EMAIL_LEASE_MS)
      renewedUntil = Date.now() + config.EMAIL_LEASE_MS - roundMs
    } catch (err) {
      deps.log.warn({ err: { message: (err as Error).message } }, 'mailbox lease round failed')
      if (Date.now() > renewedUntil) await Promise.all([...readers.keys()].map((id) => drop(id)))
      return
    }
    if (stopped) return
    const mine = new Set(claimed)
    for (const id of readers.keys()) if (!mine.has(id)) await drop(id)
    for (const id of mine) if (!readers.has(id)) readers.set(id, new MailboxReader(deps, id, holder))
  }
  const drop = async (id: string) => {
    const r = readers.get(id)
    readers.delete(id)
    await r?.stop()
  }
  const tick = () => {
    if (running || stopped) return
    running = round()
      .catch((err) => depsOf().log.error({ err }, 'mailbox lease round failed'))
      .finally(() => {
        running = null
      })
  }
  return {
    holder,
    start() {
      if (timer || stopped) return
      timer = setInterval(tick, roundMs)
      timer.unref()
      tick()
    },
    async stop() {
      stopped = true
      if (timer) clearInterval(timer)
      await running
      await Promise.all([...readers.keys()].map((id) => drop(id)))
      const deps = depsOf()
      await deps.sql`UPDATE email_mailboxes SET holder = NULL, lease_expires_at = NULL, updated_at = clock_timestamp() WHERE holder = ${holder}`.catch((err) =>
        deps.log.warn({ err: { message: (err as Error).message } }, 'mailbox leases not released (they expire)'),
      )
    },
    async round() {
      while (running) await running
      await round()
    },
    held: () => [...readers.keys()],
  }
}

/**
 * One lease round: every active e-mail channel gets its lease row, then this process renews the
 * leases it holds and takes the free or expired ones. Answers the channels it holds.
 */
async function claim(deps: Deps, holder: string, leaseMs: number): Promise<string[]> {
  await deps.sql`
    INSERT INTO email_mailboxes (channel_id, workspace_id)
    SELECT c.id, c.workspace_id FROM channels c
    WHERE c.kind = 'email' AND c.active AND NOT EXISTS (SELECT 1 FROM email_mailboxes m WHERE m.channel_id = c.id)
    ON CONFLICT (channel_id) DO NOTHING`
  const rows = await deps.sql<{ channelId: string }[]>`
    UPDATE email_mailboxes m SET holder = ${holder}, lease_expires_at = clock_timestamp() + ${leaseMs} * interval '1 millisecond', updated_at = clock_timestamp()
    FROM channels c
    WHERE c.id = m.channel_id AND c.kind = 'email' AND c.active
      AND (m.holder = ${holder} OR m.holder IS NULL OR m.lease_expires_at < clock_timestamp())
    RETURNING m.channel_id AS "channelId"`
  return rows.map((r) => r.channelId)
}

/** What wakes a waiting reader: the server's news (IDLE), a closed connection, stop. */
interface Signal {
  wake: (() => void) | null
  /** News that came while the reader was busy: the next wait returns at once. */
  pending: boolean
}

const sleep = (ms: number, signal: Signal) =>
  new Promise<void>((resolve) => {
    if (signal.pending) {
      signal.pending = false
      return resolve()
    }
    const t = setTimeout(done, ms)
    function done() {
      clearTimeout(t)
      signal.wake = null
      signal.pending = false
      resolve()
    }
    signal.wake = done
  })

/**
 * One mailbox, read by this process while it holds the lease: connect, open the mailbox, import
 * what is new, then wait in IDLE for the server to announce mail (imapflow's auto-IDLE, started
 * right after each command) or for the poll (EMAIL_POLL_MS: the fallback for a server without
 * IDLE or a lost notification). A failure records the channel's `email.status` error and retries
 * with backoff (1 s doubling to 60 s).
 */
class MailboxReader {
  private stopped = false
  private client: ImapFlow | null = null
  private readonly signal: Signal = { wake: null, pending: false }
  private readonly done: Promise<void>

  constructor(
    private readonly deps: Deps,
    private readonly channelId: string,
    private readonly holder: string,
  ) {
    this.done = this.run()
  }

  async stop() {
    this.stopped = true
    this.signal.wake?.()
    this.client?.close()
    await this.done
  }

  private async run() {
    let backoff = 1000
    while (!this.stopped) {
      try {
        await this.session()
        backoff = 1000
      } catch (err) {
        if (this.stopped) break
        const message = mailErrorText(err)
        this.deps.log.warn({ channelId: this.channelId, err: { message } }, 'mailbox reader failed; retrying')
        await this.status('error', message)
        // The failed connection's own close is no news: the backoff is waited in full.
        this.signal.pending = false
        await sleep(backoff, this.signal)
        backoff = Math.min(backoff * 2, 60_000)
      } finally {
        this.client?.close()
        this.client = null
      }
    }
  }

  private async session() {
    const { deps } = this
    const settings = await channelMailSettings(deps.sql, deps.config, this.channelId)
    if (!settings || !settings.active) {
      // Gone or deactivated: the next lease round drops this reader.
      await sleep(deps.config.EMAIL_POLL_MS, this.signal)
      return
    }
    // imapflow is loaded when a mailbox is first read (layer rule 10).
    const { ImapFlow } = await import('imapflow')
    const client = new ImapFlow({
      host: settings.imap.host,
      port: settings.imap.port,
      secure: settings.imap.secure,
      auth: { user: settings.imap.username, pass: settings.imap.password },
      logger: false,
      // IDLE starts as soon as the reader waits, and is renewed every few minutes (servers drop long IDLEs).
      autoIdleDelay: 100,
      maxIdleTime: 4 * 60_000,
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
    })
    this.client = client
    client.on('error', (err: Error) => deps.log.warn({ channelId: this.channelId, err: { message: err.message } }, 'IMAP connection error'))
    const news = () => {
      this.signal.pending = true
      this.signal.wake?.()
    }
    client.on('exists', news)
    client.on('close', news)
    await client.connect()
    if (this.stopped) return
    // Read-only (EXAMINE): Parley never changes the mailbox (docs/email.md "What Parley writes to the mailbox").
    await client.mailboxOpen(settings.imap.mailbox, { readOnly: true })
    while (!this.stopped) {
      if (!client.usable) throw new Error('the IMAP connection closed')
      await this.sync(client, settings)
      await this.status('ok', null)
      if (this.stopped) return
      await sleep(deps.config.EMAIL_POLL_MS, this.signal)
    }
  }

  /** Imports every mail after the stored place, in UID order, a batch per transaction (importBatch). */
  private async sync(client: ImapFlow, settings: ChannelMailSettings) {
    // A NOOP first: the server reports new mail (EXISTS) even where IDLE is missing or was lost.
    await client.noop()
    const box = client.mailbox
    if (!box) throw new Error('no mailbox open')
    const uidValidity = Number(box.uidValidity)
    let last = await this.place(client, uidValidity)
    if (box.exists === 0) return
    const place: ReaderPlace = { channelId: this.channelId, workspaceId: settings.workspaceId, address: settings.address, holder: this.holder, uidValidity }
    for (;;) {
      // Sizes first (cheap), then the sources a batch at a time.
      const listed: { uid: number; size: number }[] = []
      for await (const m of client.fetch(`${last + 1}:*`, { uid: true, size: true }, { uid: true })) {
        if (m.uid > last) listed.push({ uid: m.uid, size: m.size ?? 0 })
      }
      if (listed.length === 0) return
      listed.sort((a, b) => a.uid - b.uid)
      const batches: { uid: number; size: number }[][] = []
      for (let i = 0; i < listed.length; ) {
        let end = i + 1
        for (let bytes = listed[i]!.size; end < listed.length && end - i < FETCH_BATCH && bytes + listed[end]!.size <= FETCH_BATCH_BYTES; end++) bytes += listed[end]!.size
        batches.push(listed.slice(i, end))
        i = end
      }
      // The next batch is fetched and parsed while the current one's transaction runs (the parse
      // is CPU, the transaction mostly waits for PostgreSQL): memory holds two batches at most.
      const load = (b: number) => {
        const p = this.load(client, batches[b]!)
        p.catch(() => {}) // awaited below, or dropped when the reader stops
        return p
      }
      let next = load(0)
      for (let b = 0; b < batches.length; b++) {
        if (this.stopped) return
        const batch = batches[b]!
        const current = await next
        if (b + 1 < batches.length) next = load(b + 1)
        const outcomes = await importBatch(this.deps, place, current.mails, current.parsed)
        if (outcomes.includes('lease-lost')) {
          this.stopped = true
          this.deps.log.warn({ channelId: this.channelId }, 'mailbox lease lost; this process stops reading it')
          return
        }
        last = batch[batch.length - 1]!.uid
      }
    }
  }

  /** A batch's sources (a mail over FETCH_MAX_BYTES cut to it; an expunged one empty), parsed. */
  private async load(client: ImapFlow, batch: { uid: number; size: number }[]): Promise<{ mails: FetchedMail[]; parsed: ParsedBatch }> {
    const small = batch.filter((m) => m.size <= FETCH_MAX_BYTES).map((m) => m.uid)
    const sources = new Map<number, Buffer>()
    if (small.length > 0) {
      for await (const m of client.fetch(small.join(','), { uid: true, source: true }, { uid: true })) if (m.source) sources.set(m.uid, m.source)
    }
    for (const m of batch) {
      if (m.size > FETCH_MAX_BYTES) {
        const cut = await client.fetchOne(String(m.uid), { uid: true, source: { start: 0, maxLength: FETCH_MAX_BYTES } }, { uid: true })
        if (cut && cut.source) sources.set(m.uid, cut.source)
      }
    }
    // Expunged between the listing and the fetch: nothing to import, the place moves past it.
    const mails = batch.map((m) => ({ uid: m.uid, raw: sources.get(m.uid) ?? Buffer.alloc(0) }))
    return { mails, parsed: await parseBatch(mails) }
  }

  /**
   * The last UID imported for this mailbox generation. A channel's first reader starts after the
   * mail that was already there when the channel was created (INTERNALDATE before its creation,
   * to the second: mail of the creation second itself is imported); a new UIDVALIDITY (the
   * mailbox was rebuilt) starts over from the first UID, the Message-ID check keeping what was
   * already imported from being stored twice.
   */
  private async place(client: ImapFlow, uidValidity: number): Promise<number> {
    const { sql } = this.deps
    const [row] = await sql<{ uidValidity: string | null; lastUid: string | null; createdMs: number }[]>`
      SELECT m.uid_validity AS "uidValidity", m.last_uid AS "lastUid", (extract(epoch FROM c.created_at) * 1000)::float8 AS "createdMs"
      FROM email_mailboxes m JOIN channels c ON c.id = m.channel_id
      WHERE m.channel_id = ${this.channelId}`
    if (!row) throw new Error('no lease row')
    // bigint columns arrive as strings.
    const stored = row.uidValidity === null ? null : Number(row.uidValidity)
    if (stored === uidValidity && row.lastUid !== null) return Number(row.lastUid)
    let start = 0
    if (stored === null) start = await this.firstPlace(client, new Date(Number(row.createdMs)))
    const set = await sql`
      UPDATE email_mailboxes SET uid_validity = ${uidValidity}, last_uid = ${start}, updated_at = clock_timestamp()
      WHERE channel_id = ${this.channelId} AND holder = ${this.holder} AND lease_expires_at > clock_timestamp()
        AND uid_validity IS NOT DISTINCT FROM ${row.uidValidity}`
    if (set.count !== 1) throw new Error('the mailbox lease was lost')
    if (stored !== null) this.deps.log.warn({ channelId: this.channelId }, 'mailbox UIDVALIDITY changed: reading it again from the start')
    return start
  }

  private async firstPlace(client: ImapFlow, createdAt: Date): Promise<number> {
    const box = client.mailbox
    const next = box ? Number(box.uidNext) : 1
    const since = new Date(Math.floor(createdAt.getTime() / 1000) * 1000)
    // SEARCH SINCE is by day: the candidates, then their INTERNALDATE to the second.
    const candidates = await client.search({ since: new Date(since.getTime() - 86_400_000) }, { uid: true })
    let first = next
    if (candidates && candidates.length > 0) {
      // One range from the oldest candidate (a list of every UID could pass the server's line limit).
      for await (const m of client.fetch(`${candidates.reduce((a, b) => Math.min(a, b))}:*`, { uid: true, internalDate: true }, { uid: true })) {
        const at = m.internalDate instanceof Date ? m.internalDate : m.internalDate ? new Date(m.internalDate) : null
        if (at && at.getTime() >= since.getTime() && m.uid < first) first = m.uid
      }
    }
    return first - 1
  }

  private async status(state: 'ok' | 'error', error: string | null) {
    await this.deps.sql`
      UPDATE channels SET email_state = ${state}, email_error = ${error},
        email_last_sync_at = CASE WHEN ${state} = 'ok' THEN clock_timestamp() ELSE email_last_sync_at END
      WHERE id = ${this.channelId}`.catch(() => {})
  }
}
