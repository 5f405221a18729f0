import { Readable, type Transform } from 'node:stream'
import { stringify } from 'csv-stringify'
import { memberOf, type Ctx } from '../context.js'
import type { Reads } from '../db/replica.js'
import { iso } from '../time.js'
import { resolveRange, type RangeQuery } from './range.js'

/** The CSV's columns, in the contract's order (API.md section 15). */
export const CSV_COLUMNS = [
  'id',
  'channel',
  'guestName',
  'agent',
  'status',
  'createdAt',
  'firstResponseAt',
  'firstResponseSeconds',
  'resolvedAt',
  'resolutionSeconds',
  'messages',
  'csat',
] as const

/** Rows read per query. */
export const CSV_BATCH = 1000

interface CsvRow {
  id: string
  channel: string
  guestName: string
  agent: string | null
  status: string
  createdAt: string
  firstResponseAt: string | null
  firstResponseSeconds: number | null
  resolvedAt: string | null
  resolutionSeconds: number | null
  messages: number
  csat: number | null
}

interface Scope {
  workspaceId: string
  from: string
  to: string
  channelId?: string
  agentId?: string
  /** The conversation's team when it was created (its creation event's team). */
  teamId?: string
}

/**
 * The conversations created in the range, oldest first, in keyset batches over conv_created_idx:
 * each batch is its own short query, so a slow download never pins a pooled connection and
 * memory stays one batch whatever the size (the transcript download reads messages the same
 * way). The first first response and the last close come from the conversation's metric events
 * (primary-key lookups); `agentId` narrows to the conversations assigned to that member.
 */
export async function* csvRows(reads: Reads, s: Scope, batch = CSV_BATCH): AsyncGenerator<CsvRow> {
  let after: { t: string; id: string } | null = null
  for (;;) {
    // JIT off: see analyticsRead (src/analytics/aggregate.ts); the planner overestimates a batch.
    // Each batch on the read replica while it is online (src/db/replica.ts), else the primary.
    const rows: (CsvRow & { rawCreatedAt: string })[] = await reads.run('main', (pool) => pool.begin(async (sql) => {
      await sql`SET LOCAL jit = off`
      return sql<(CsvRow & { rawCreatedAt: string })[]>`
      SELECT c.id, ch.name AS channel, g.name AS "guestName", m.name AS agent, c.status, c.created_at AS "rawCreatedAt",
             fr.occurred_at AS "firstResponseAt", fr.value AS "firstResponseSeconds",
             rs.occurred_at AS "resolvedAt", rs.value AS "resolutionSeconds", c.public_messages AS messages, cs.value AS csat
      FROM conversations c
      JOIN channels ch ON ch.id = c.channel_id
      JOIN guests g ON g.id = c.guest_id
      LEFT JOIN members m ON m.workspace_id = c.workspace_id AND m.user_id = c.assigned_agent_id
      LEFT JOIN LATERAL (SELECT occurred_at, value FROM metric_events e
                         WHERE e.conversation_id = c.id AND e.kind = 'first_response' ORDER BY e.seq LIMIT 1) fr ON true
      LEFT JOIN LATERAL (SELECT occurred_at, value FROM metric_events e
                         WHERE e.conversation_id = c.id AND e.kind = 'conversation_resolved' ORDER BY e.seq DESC LIMIT 1) rs ON true
      LEFT JOIN metric_events cs ON cs.conversation_id = c.id AND cs.kind = 'csat' AND cs.seq = 0
      WHERE c.workspace_id = ${s.workspaceId} AND c.deleted_at IS NULL
        AND c.created_at >= ${s.from}::timestamptz AND c.created_at < ${s.to}::timestamptz
        ${s.channelId !== undefined ? sql`AND c.channel_id = ${s.channelId}::uuid` : sql``}
        ${s.agentId !== undefined ? sql`AND c.assigned_agent_id = ${s.agentId}` : sql``}
        ${s.teamId !== undefined
          ? sql`AND EXISTS (SELECT 1 FROM metric_events t WHERE t.conversation_id = c.id AND t.kind = 'conversation_created' AND t.seq = 0 AND t.team_id = ${s.teamId}::uuid)`
          : sql``}
        ${after ? sql`AND (c.created_at, c.id) > (${after.t}::timestamptz, ${after.id}::uuid)` : sql``}
      ORDER BY c.created_at, c.id
      LIMIT ${batch}`
    }))
    for (const r of rows) {
      yield {
        ...r,
        createdAt: iso(r.rawCreatedAt),
        firstResponseAt: iso(r.firstResponseAt),
        resolvedAt: iso(r.resolvedAt),
      }
    }
    if (rows.length < batch) return
    const last = rows[rows.length - 1]!
    after = { t: last.rawCreatedAt, id: last.id }
  }
}

/**
 * Spreadsheets run a cell starting with one of these as a formula: it gets a leading '. A tab or
 * carriage return counts too: some readers drop it and run what follows (OWASP's list).
 */
const FORMULA_START = /^[=+\-@\t\r]/

/** A cell's text: empty for null, formula-looking text neutralised. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return ''
  const text = String(value)
  return FORMULA_START.test(text) ? `'${text}` : text
}

/**
 * GET /analytics/conversations.csv: RFC 4180 (CRLF line ends, a cell holding a line break, a
 * quote or a comma quoted, quotes doubled) from csv-stringify, header first, no BOM. The range
 * is checked before the first byte, so a bad query is a 400 with the error body, never a
 * half-sent file.
 */
export async function conversationsCsv(ctx: Ctx, q: RangeQuery): Promise<Transform> {
  const { workspaceId } = memberOf(ctx)
  const range = await resolveRange(ctx.sql, q)
  const rows = csvRows(ctx.reads, { workspaceId, from: range.from, to: range.to, channelId: q.channelId, agentId: q.agentId, teamId: q.teamId })
  const out = stringify({
    header: true,
    columns: [...CSV_COLUMNS],
    record_delimiter: 'windows',
    // csv-stringify quotes a cell holding the delimiter, a quote or the whole record delimiter
    // (\r\n) only: a lone \n or \r would let a reader start a new row inside a cell (and a
    // formula at its start). Any line break is quoted.
    quoted_match: /[\r\n]/,
    cast: { string: csvCell, number: (v) => csvCell(v) },
  })
  const source = Readable.from(rows)
  source.on('error', (err) => out.destroy(err))
  return source.pipe(out)
}
