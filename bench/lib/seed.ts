import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { dropSecondaryObjects, type Pool } from './db.js'
import { Progress, fmtInt, step } from './progress.js'
import { Rng } from './rng.js'
import { FIRST_NAMES, LAST_NAMES, MAIL_DOMAINS, RARE_TOKEN, buildVocabulary, messageBody } from './words.js'

export interface SeedWorkspace {
  id: string
  name: string
  /** Conversations seeded in it. */
  size: number
  channels: string[]
  owner: { userId: string; name: string }
  agents: { userId: string; name: string }[]
  /** 20 labels (section 17): label k is on about 30/(k+1) % of the conversations. */
  labels: string[]
}

export interface SeedResult {
  workspaces: SeedWorkspace[]
  largest: SeedWorkspace
  /** The ~10k workspace the unread-count baseline is measured on. */
  small: SeedWorkspace
  conversations: number
  messages: number
  guests: number
  rareTokenMessages: number
  /** Workspaces with no conversations: customers whose billing events the webhook scenario sends. */
  billingOnlyWorkspaces: string[]
  timings: Record<string, number>
}

/**
 * Workspace sizes: the largest holds 55%, a small one 10,000 (the unread-count baseline; 5% on
 * quick runs under 100k), the rest spread over four mid-sized workspaces.
 */
export function workspaceSizes(total: number): { largest: number; small: number; others: number[] } {
  const small = total >= 100_000 ? 10_000 : Math.max(50, Math.round(total * 0.05))
  const largest = Math.ceil(total * 0.55)
  const rest = Math.max(0, total - largest - small)
  const shares = [0.4, 0.3, 0.2, 0.1]
  const others = shares.map((s) => Math.floor(rest * s))
  others[0] += rest - others.reduce((a, b) => a + b, 0)
  return { largest, small, others: others.filter((n) => n > 0) }
}

const DAY = 86_400_000
const CHUNK = 1 << 18

/** Text-format COPY writer: buffers lines, writes ~256 KiB chunks, honours back-pressure. */
class CopyWriter {
  private parts: string[] = []
  size = 0
  rows = 0
  constructor(private w: Writable) {}

  line(fields: (string | number | boolean | null)[]): void {
    let s = ''
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]
      if (i) s += '\t'
      s += f === null ? '\\N' : typeof f === 'boolean' ? (f ? 't' : 'f') : String(f)
    }
    this.parts.push(s + '\n')
    this.size += s.length + 1
    this.rows++
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return
    const chunk = this.parts.join('')
    this.parts = []
    this.size = 0
    if (!this.w.write(chunk)) await once(this.w, 'drain')
  }

  async end(): Promise<void> {
    await this.flush()
    this.w.end()
    await finished(this.w)
  }
}

/**
 * Opens `COPY table FROM STDIN` on its own connection. With `freeze`, it runs in a transaction
 * right after a TRUNCATE of the (empty) table, so FREEZE can write the rows frozen and
 * all-visible: no VACUUM pass is needed and no hint-bit rewrite happens on first read. A table
 * loaded by several streams at once (messages: its generated tsvector column makes it CPU-bound
 * in the backend) cannot use FREEZE; VACUUM sets its visibility map afterwards.
 */
async function openCopy(sql: Pool, table: string, columns: string[], freeze: boolean): Promise<{ writer: CopyWriter; done: Promise<unknown> }> {
  let resolveWriter!: (w: CopyWriter) => void
  const ready = new Promise<CopyWriter>((r) => (resolveWriter = r))
  const copy = `COPY ${table} (${columns.join(', ')}) FROM STDIN${freeze ? ' (FREEZE)' : ''}`
  const done = freeze
    ? sql.begin(async (tx) => {
        await tx.unsafe(`TRUNCATE ${table}`)
        const w = await tx.unsafe(copy).writable()
        resolveWriter(new CopyWriter(w))
        await finished(w)
      })
    : (async () => {
        const w = await sql.unsafe(copy).writable()
        resolveWriter(new CopyWriter(w))
        await finished(w)
      })()
  const writer = await Promise.race([ready, done.then(() => Promise.reject(new Error(`COPY ${table} ended early`)))])
  return { writer, done }
}

function ts(ms: number, micros: number): string {
  // ISO with microseconds; Postgres reads it as timestamptz.
  return new Date(ms).toISOString().slice(0, 23) + String(micros).padStart(3, '0') + 'Z'
}

export interface SeedOptions {
  conversations: number
  seed: number
}

export async function seed(sql: Pool, opts: SeedOptions): Promise<SeedResult> {
  const timings: Record<string, number> = {}
  const rng = new Rng(opts.seed)
  const vocab = buildVocabulary()
  const sizes = workspaceSizes(opts.conversations)
  const now = Date.now()
  const start = now - 181 * DAY
  const span = 180 * DAY

  // Workspaces, channels, members: a few rows, plain inserts.
  const plan: { name: string; size: number; agents: number }[] = [
    { name: 'Largest Co', size: sizes.largest, agents: 40 },
    ...sizes.others.map((size, i) => ({ name: `Mid ${i + 1}`, size, agents: 12 })),
    { name: 'Small Shop', size: sizes.small, agents: 5 },
  ]
  // Triage fields (labels, priority) draw from their own generator, so the rest of the seed stays
  // what earlier runs had.
  const trng = new Rng(opts.seed + 27)
  const workspaces: SeedWorkspace[] = plan.map((p, wi) => {
    const id = rng.uuid4()
    const agents = Array.from({ length: p.agents }, (_, j) => ({
      userId: `bench|w${wi}|agent${j}`,
      name: `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`,
    }))
    return {
      id,
      name: p.name,
      size: p.size,
      channels: [rng.uuid4(), rng.uuid4(), rng.uuid4()],
      owner: { userId: `bench|w${wi}|owner`, name: 'Owen Owner' },
      agents,
      labels: Array.from({ length: 20 }, () => trng.uuid4()),
    }
  })
  for (const ws of workspaces) {
    await sql`INSERT INTO workspaces (id, name, created_at) VALUES (${ws.id}, ${ws.name}, ${ts(start - DAY, 0)})`
    for (const [ci, ch] of ws.channels.entries()) {
      await sql`INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret, created_at)
        VALUES (${ch}, ${ws.id}, ${['Website', 'Help center', 'Mobile app'][ci]},
                ${'ct_' + randomBytes(16).toString('hex')}, ${'is_' + randomBytes(24).toString('hex')}, ${ts(start - DAY, ci)})`
    }
    const rows = [
      { workspace_id: ws.id, user_id: ws.owner.userId, name: ws.owner.name, email: `owner.${ws.id.slice(0, 8)}@bench.test`, role: 'owner' },
      ...ws.agents.map((a, j) => ({
        workspace_id: ws.id,
        user_id: a.userId,
        name: a.name,
        email: `agent${j}.${ws.id.slice(0, 8)}@bench.test`,
        role: j === 0 ? 'admin' : 'agent',
      })),
    ]
    await sql`INSERT INTO members ${sql(rows)}`
    await sql`INSERT INTO labels ${sql(ws.labels.map((id, k) => ({ id, workspace_id: ws.id, name: `L${k}`, color: '#336699' })))}`
  }

  // Many more customers than the six with conversations: provider events arrive for all of them.
  const billingOnlyWorkspaces = Array.from({ length: 500 }, () => rng.uuid4())
  await sql`INSERT INTO workspaces ${sql(billingOnlyWorkspaces.map((id, i) => ({ id, name: `Tenant ${i + 1}`, created_at: ts(start - DAY, i) })))}`

  // Bulk tables: drop secondary indexes and foreign keys, stream all three with COPY at once.
  // search_chunks is filled by the messages trigger during the COPY (one set-based pass per stream).
  const bulkTables = ['guests', 'conversations', 'messages', 'search_chunks', 'assignment_history', 'unread_counters', 'metric_events', 'metric_rollups']
  let t0 = Date.now()
  const dropped = await dropSecondaryObjects(sql, bulkTables)
  step(`dropped ${dropped.indexes.length} secondary indexes and ${dropped.foreignKeys.length} foreign keys for the bulk load`)

  const guestCols = ['id', 'workspace_id', 'channel_id', 'name', 'email', 'verified', 'created_at', 'updated_at']
  const convCols = [
    'id', 'workspace_id', 'channel_id', 'guest_id', 'status', 'pinned', 'assigned_agent_id', 'unread_count',
    'agent_last_seen_at', 'visitor_last_seen_at', 'last_message_at', 'last_message_preview', 'created_at',
    'updated_at', 'closed_at', 'deleted_at', 'priority', 'label_ids',
  ]
  const msgCols = ['id', 'workspace_id', 'conversation_id', 'sender_type', 'sender_id', 'sender_name', 'body', 'created_at']
  const histCols = ['id', 'workspace_id', 'conversation_id', 'action', 'agent_id', 'previous_agent_id', 'by_user_id', 'created_at']
  const copies = [
    await openCopy(sql, 'guests', guestCols, true),
    await openCopy(sql, 'conversations', convCols, true),
    await openCopy(sql, 'assignment_history', histCols, true),
    await openCopy(sql, 'messages', msgCols, false),
    await openCopy(sql, 'messages', msgCols, false),
  ]
  const [G, C, H, M1, M2] = copies.map((c) => c.writer)

  const total = workspaces.reduce((a, w) => a + w.size, 0)
  const bar = new Progress('seed conversations+messages', total, 'conversations')
  let rareTokenMessages = 0
  let guestSeq = 0
  for (const [wi, ws] of workspaces.entries()) {
    // About 25 messages carry the rare token in the largest workspace, a few elsewhere.
    const rareRate = wi === 0 ? 25 / (ws.size * 5) : 3 / (ws.size * 5)
    // A team pins a handful of conversations, not a share of them: about 12 per workspace.
    const pinRate = Math.min(0.05, 12 / (ws.size * 0.6))
    const recentGuests: { id: string; channel: string; name: string }[] = []
    for (let i = 0; i < ws.size; i++) {
      const createdMs = start + ((i + rng.next()) * span) / ws.size
      // Guests: most conversations come from a new visitor, some from a returning one.
      let guest: { id: string; channel: string; name: string }
      if (recentGuests.length === 0 || rng.chance(0.8)) {
        const first = rng.pick(FIRST_NAMES)
        const last = rng.pick(LAST_NAMES)
        const r = rng.next()
        const channel = ws.channels[r < 0.6 ? 0 : r < 0.9 ? 1 : 2]
        guest = { id: rng.uuid7(createdMs - 60_000), channel, name: `${first} ${last}` }
        const email = `${first}.${last}${++guestSeq}@${rng.pick(MAIL_DOMAINS)}`.toLowerCase()
        const gts = ts(createdMs - 60_000, 0)
        G.line([guest.id, ws.id, channel, guest.name, email, false, gts, gts])
        if (recentGuests.length < 64) recentGuests.push(guest)
        else recentGuests[rng.int(0, 63)] = guest
      } else {
        guest = rng.pick(recentGuests)
      }

      const convId = rng.uuid7(createdMs)
      const M = i & 1 ? M2 : M1
      const s = rng.next()
      const status = s < 0.6 ? 'OPEN' : s < 0.95 ? 'RESOLVED' : 'CLOSED'
      const assigned = rng.chance(0.65) ? rng.pick(ws.agents) : null
      const n = rng.int(3, 7)
      // Unread: the last k messages are the guest's, after the agents' last seen mark.
      const unreadK = (status === 'OPEN' ? rng.chance(0.35) : rng.chance(0.1)) ? rng.int(1, Math.min(3, n - 1)) : 0
      let t = createdMs
      let lastBody = ''
      let lastMs = t
      let lastAt = ''
      let seenMs: number | null = null
      for (let m = 0; m < n; m++) {
        if (m > 0) t += 30_000 + rng.next() * rng.next() * 7_200_000
        const guestMsg = m >= n - unreadK || m % 2 === 0
        const extra = rng.chance(rareRate) ? RARE_TOKEN : undefined
        if (extra) rareTokenMessages++
        const body = messageBody(vocab, rng, guestMsg, extra)
        const at = ts(t, rng.int(0, 999))
        const agent = assigned ?? ws.agents[m % ws.agents.length]
        M.line([
          rng.uuid7(t),
          ws.id,
          convId,
          guestMsg ? 'GUEST' : 'AGENT',
          guestMsg ? guest.id : agent.userId,
          guestMsg ? guest.name : agent.name,
          body,
          at,
        ])
        if (m === n - unreadK - 1) seenMs = t + 1000
        lastBody = body
        lastMs = t
        lastAt = at
      }
      const closedMs = status === 'OPEN' ? null : lastMs + 600_000
      const deletedMs = rng.chance(0.005) ? lastMs + 3_600_000 : null
      const updatedMs = Math.max(lastMs, closedMs ?? 0, deletedMs ?? 0)
      C.line([
        convId,
        ws.id,
        guest.channel,
        guest.id,
        status,
        status === 'OPEN' && rng.chance(pinRate),
        assigned?.userId ?? null,
        unreadK,
        seenMs === null ? null : ts(seenMs, 0),
        null,
        lastAt,
        lastBody.slice(0, 140),
        ts(createdMs, 0),
        updatedMs === lastMs ? lastAt : ts(updatedMs, 0),
        closedMs === null ? null : ts(closedMs, 0),
        deletedMs === null ? null : ts(deletedMs, 0),
        // Priority: none 70%, low 10, medium 10, high 7, urgent 3.
        ((r) => (r < 0.7 ? null : r < 0.8 ? 'low' : r < 0.9 ? 'medium' : r < 0.97 ? 'high' : 'urgent'))(trng.next()),
        `{${ws.labels.filter((_, k) => trng.chance(0.3 / (k + 1))).join(',')}}`,
      ])
      if (assigned) {
        // One ASSIGNED history entry, by the owner, a minute after the conversation started.
        H.line([rng.uuid4(), ws.id, convId, 'ASSIGNED', assigned.userId, null, ws.owner.userId, ts(createdMs + 60_000, 0)])
      }
      for (const w of copies) if (w.writer.size > CHUNK) await w.writer.flush()
      if ((i & 255) === 0) bar.set(workspaces.slice(0, wi).reduce((a, w) => a + w.size, 0) + i)
    }
  }
  await Promise.all(copies.map((c) => c.writer.end()))
  await Promise.all(copies.map((c) => c.done))
  const messageRows = M1.rows + M2.rows
  timings.copy = bar.finish(`(${fmtInt(messageRows)} messages, ${fmtInt(G.rows)} guests, ${fmtInt(H.rows)} assignments)`)

  // Unread counters from the data itself, in the shape the counters code keeps them.
  t0 = Date.now()
  await computeUnreadCounters(sql)
  timings.counters = (Date.now() - t0) / 1000
  step(`unread counters computed in ${timings.counters.toFixed(1)} s`)

  // Analytics events derived from the seeded conversations and messages (the same distribution),
  // set-based by the migration's own functions, then the rollups from the events.
  t0 = Date.now()
  await computeMetrics(sql)
  timings.metrics = (Date.now() - t0) / 1000
  step(`analytics events and rollups computed in ${timings.metrics.toFixed(1)} s`)

  // Rebuild the indexes, two at a time (two cores), biggest first; then the foreign keys.
  t0 = Date.now()
  await rebuildIndexes(sql, dropped.indexes)
  timings.indexes = (Date.now() - t0) / 1000
  t0 = Date.now()
  for (const fk of dropped.foreignKeys) {
    // NOT VALID: enforced for every new row; the seeded rows are consistent by construction,
    // and validating 5M rows would only cost time.
    await sql.unsafe(`ALTER TABLE ${fk.table} ADD CONSTRAINT "${fk.name}" ${fk.def} NOT VALID`)
  }
  // Visibility map for messages (loaded without FREEZE), statistics for all; this also keeps
  // autovacuum from starting on the fresh rows in the middle of a measurement.
  await sql`VACUUM (ANALYZE)`
  // The load left gigabytes of dirty buffers: write them now, so the first scenarios do not
  // share the machine with the checkpointer writing them.
  await sql`CHECKPOINT`
  timings.analyze = (Date.now() - t0) / 1000
  step(`foreign keys restored, statistics gathered in ${timings.analyze.toFixed(1)} s`)

  return {
    workspaces,
    largest: workspaces[0],
    small: workspaces[workspaces.length - 1],
    conversations: C.rows,
    messages: messageRows,
    guests: G.rows,
    rareTokenMessages,
    billingOnlyWorkspaces,
    timings,
  }
}

/**
 * The counters as the application keeps them: per workspace, scopes 'all', 'unassigned',
 * 'agent:<userId>' and 'channel:<id>', each the OPEN, not deleted conversations with unread
 * guest messages and the number of those messages. Slot 0 holds everything (the application
 * spreads later deltas over slots and sums them).
 */
export async function computeUnreadCounters(sql: Pool): Promise<void> {
  await sql`DELETE FROM unread_counters`
  await sql`
    INSERT INTO unread_counters (workspace_id, scope, slot, conversations, messages)
    SELECT workspace_id, scope, 0, count(*)::int, sum(unread_count)::int
    FROM (
      SELECT c.workspace_id, c.unread_count,
             unnest(ARRAY['all',
                          COALESCE('agent:' || c.assigned_agent_id, 'unassigned'),
                          'channel:' || c.channel_id::text]) AS scope
      FROM conversations c
      WHERE c.deleted_at IS NULL AND c.status = 'OPEN' AND c.unread_count > 0
    ) s
    GROUP BY workspace_id, scope`
}

/**
 * metric_events from the seeded rows (metric_backfill(): creations, public messages, first agent
 * replies, closes) and metric_rollups from the events (metric_rebuild_rollups()), both defined in
 * migration issue16_analytics_sql, so the bench measures data shaped exactly like the conversations it seeded.
 */
export async function computeMetrics(sql: Pool): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SET LOCAL work_mem = '1GB'`
    await tx`SELECT metric_backfill()`
    await tx`SELECT metric_rebuild_rollups()`
  })
}

async function rebuildIndexes(sql: Pool, indexes: { table: string; name: string; def: string }[]): Promise<void> {
  const weight = (ix: { table: string; def: string }) =>
    (ix.table === 'messages' ? 100 : ix.table === 'conversations' || ix.table === 'search_chunks' ? 20 : 5) * (/USING gin/i.test(ix.def) ? 5 : 1)
  const queue = [...indexes].sort((a, b) => weight(b) - weight(a))
  const bar = new Progress('rebuild indexes', queue.length, 'indexes')
  let done = 0
  const worker = async () => {
    // A dedicated connection per worker, with memory for sorts and GIN builds.
    const conn = await sql.reserve()
    try {
      await conn`SET maintenance_work_mem = '1GB'`
      await conn`SET max_parallel_maintenance_workers = 0`
      for (let ix = queue.shift(); ix; ix = queue.shift()) {
        await conn.unsafe(ix.def)
        bar.set(++done)
      }
    } finally {
      conn.release()
    }
  }
  await Promise.all([worker(), worker()])
  bar.finish()
}
