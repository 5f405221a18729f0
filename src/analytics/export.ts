import { Readable } from 'node:stream'
import { memberOf, type Ctx } from '../context.js'
import type { Reads } from '../db/replica.js'
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

/** Rows read per query: one string of their CSV lines per batch. */
export const CSV_BATCH = 1000

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
 * One CSV cell in SQL (`t` a text expression of the batch's columns, never input): empty for
 * NULL; text a spreadsheet would run as a formula (starting with = + - @, a tab or a carriage
 * return: OWASP's list, as some readers drop the tab or CR and run what follows) gets a leading ';
 * then RFC 4180 quoting when the text holds a comma, a quote or any line break (a lone \n or \r
 * would let a reader start a new row inside a cell), quotes doubled. The export's one cell writer.
 */
function csvCell(t: string): string {
  const v = `CASE WHEN ${t} ~ E'^[=+@\\t\\r-]' THEN '''' || ${t} ELSE ${t} END`
  return `COALESCE(CASE WHEN ${t} ~ E'[,"\\r\\n]' THEN '"' || replace(${v}, '"', '""') || '"' ELSE ${v} END, '')`
}

/** An instant as the API writes it (src/time.ts iso): UTC, milliseconds (truncated), Z. */
const isoSql = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** The CRLF-ended CSV line of a row of `b`, its cells in CSV_COLUMNS' order. */
const CSV_LINE =
  [
    csvCell('b.id::text'),
    csvCell('b.channel'),
    csvCell('b.guest_name'),
    csvCell('b.agent'),
    csvCell('b.status'),
    csvCell(isoSql('b.created_at')),
    csvCell(isoSql('b.first_response_at')),
    csvCell('b.first_response_seconds::text'),
    csvCell(isoSql('b.resolved_at')),
    csvCell('b.resolution_seconds::text'),
    csvCell('b.messages::text'),
    csvCell('b.csat::text'),
  ].join(` || ',' || `) + ` || E'\\r\\n'`

/**
 * Rows per string that reaches Node (a batch comes as CSV_BATCH / CSV_PIECE strings): ~30 KB of
 * CSV, below V8's large-object size (128 KB). A whole batch's string (~155 KB) was allocated in
 * the large-object space, which only a major collection frees, so a year's export left up to
 * ~80 MiB of dead batches in the RSS; pieces this size die young (docs/analytics.md, "The
 * export's memory").
 */
export const CSV_PIECE = 200

/** One piece of a batch of the export: how many rows, their CSV lines, the last row's key. */
type CsvChunk = { rows: number; text: string | null; lastAt: string | null; lastId: string | null }

/**
 * The CSV text of the conversations created in the range, oldest first: the header, then the
 * strings of keyset batches of CSV_BATCH rows over conv_created_idx. Each batch is its own short
 * query (a slow download never pins a pooled connection or holds a snapshot open), and PostgreSQL
 * writes the lines itself (`string_agg` of CSV_LINE): what reaches Node is one string per
 * CSV_PIECE rows of a batch, not an object and twelve values per row, the garbage that took the
 * API from 211 to 377 MiB of RSS over a year's export of 547,230 rows (docs/analytics.md). The first first response and the
 * last close come from the conversation's metric events (primary-key lookups); `agentId` narrows
 * to the conversations assigned to that member.
 */
export async function* csvChunks(reads: Reads, s: Scope, batch = CSV_BATCH): AsyncGenerator<string> {
  yield `${CSV_COLUMNS.join(',')}\r\n`
  let after: { t: string; id: string } | null = null
  for (;;) {
    // JIT off: see analyticsRead (src/analytics/aggregate.ts); the planner overestimates a batch.
    // Each batch on the read replica while it is online (src/db/replica.ts), else the primary.
    const pieces: CsvChunk[] = await reads.run('main', (pool) => pool.begin(async (sql) => {
      await sql`SET LOCAL jit = off`
      return sql<CsvChunk[]>`
        WITH b AS (
          SELECT c.id, ch.name AS channel, g.name AS guest_name, m.name AS agent, c.status, c.created_at,
                 fr.occurred_at AS first_response_at, fr.value AS first_response_seconds,
                 rs.occurred_at AS resolved_at, rs.value AS resolution_seconds, c.public_messages AS messages, cs.value AS csat
          FROM conversations c
          JOIN channels ch ON ch.id = c.channel_id
          JOIN guests g ON g.id = c.guest_id
          LEFT JOIN members m ON m.workspace_id = c.workspace_id AND m.user_id = c.assigned_agent_id
          LEFT JOIN LATERAL (SELECT occurred_at, value FROM metric_events e
                             WHERE e.conversation_id = c.id AND e.kind = 'first_response' ORDER BY e.seq LIMIT 1) fr ON true
          LEFT JOIN LATERAL (SELECT occurred_at, value FROM metric_events e
                             WHERE e.conversation_id = c.id AND e.kind = 'conversation_resolved' ORDER BY e.seq DESC LIMIT 1) rs ON true
          -- A primary-key probe per row (LIMIT 1 keeps the planner from flattening it into a join):
          -- as a join, a workspace with few csat events got custom plans scanning all of
          -- metric_events for every batch (docs/analytics.md, "The export's first batches").
          LEFT JOIN LATERAL (SELECT value FROM metric_events e
                             WHERE e.conversation_id = c.id AND e.kind = 'csat' AND e.seq = 0 LIMIT 1) cs ON true
          WHERE c.workspace_id = ${s.workspaceId} AND c.deleted_at IS NULL
            AND c.created_at >= ${s.from}::timestamptz AND c.created_at < ${s.to}::timestamptz
            ${s.channelId !== undefined ? sql`AND c.channel_id = ${s.channelId}::uuid` : sql``}
            ${s.agentId !== undefined ? sql`AND c.assigned_agent_id = ${s.agentId}` : sql``}
            ${s.teamId !== undefined
              ? sql`AND EXISTS (SELECT 1 FROM metric_events t WHERE t.conversation_id = c.id AND t.kind = 'conversation_created' AND t.seq = 0 AND t.team_id = ${s.teamId}::uuid)`
              : sql``}
            ${after ? sql`AND (c.created_at, c.id) > (${after.t}::timestamptz, ${after.id}::uuid)` : sql``}
          ORDER BY c.created_at, c.id
          LIMIT ${batch}
        ), pieces AS (SELECT b.*, (row_number() OVER (ORDER BY b.created_at, b.id) - 1) / ${CSV_PIECE} AS piece FROM b)
        SELECT count(*)::int AS rows,
               string_agg(${sql.unsafe(CSV_LINE)}, '' ORDER BY b.created_at, b.id) AS text,
               (array_agg(b.created_at::text ORDER BY b.created_at DESC, b.id DESC))[1] AS "lastAt",
               (array_agg(b.id::text ORDER BY b.created_at DESC, b.id DESC))[1] AS "lastId"
        FROM pieces b GROUP BY b.piece ORDER BY b.piece`
    }))
    if (pieces.length === 0) return
    let rows = 0
    for (const piece of pieces) {
      rows += piece.rows
      yield piece.text!
    }
    if (rows < batch) return
    const last = pieces[pieces.length - 1]!
    after = { t: last.lastAt!, id: last.lastId! }
  }
}

/**
 * GET /analytics/conversations.csv: RFC 4180 (CRLF line ends, a cell holding a line break, a
 * quote or a comma quoted, quotes doubled), header first, no BOM. The range is checked before the
 * first byte, so a bad query is a 400 with the error body, never a half-sent file.
 *
 * A byte stream (16 KiB high-water mark) over csvChunks: it asks for the next batch only once the
 * reply has taken what it holds, so a slow download holds about two batches (some 300 KB) whatever
 * the export's size, and the database is never read ahead of the client.
 */
export async function conversationsCsv(ctx: Ctx, q: RangeQuery): Promise<Readable> {
  const { workspaceId } = memberOf(ctx)
  const range = await resolveRange(ctx.sql, q)
  const scope = { workspaceId, from: range.from, to: range.to, channelId: q.channelId, agentId: q.agentId, teamId: q.teamId }
  return Readable.from(csvChunks(ctx.reads, scope), { objectMode: false })
}
