import { createHash } from 'node:crypto'
import { memberOf, type Ctx } from '../context.js'
import type { Pool } from '../db/client.js'
import type { ConversationView } from '../../schemas/conversations.js'
import { invalidCursor } from '../errors.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, toConversationView, type ConversationRecord } from '../conversations/view.js'
import { escapeHtml } from '../html.js'
import { isUuid } from '../uuid.js'
import { highlight, highlightSubstring, START, STOP } from './highlight.js'

export interface SearchResult {
  data: (ConversationView & { match: string })[]
  nextCursor: string | null
}

/** Score of a conversation whose guest's name or e-mail contains the query (exact: twice that). */
const GUEST_SCORE = 1

const RANK = /^\d{1,6}(\.\d{1,6})?$/

const HEADLINE_OPTIONS = `StartSel=${START}, StopSel=${STOP}, MaxWords=24, MinWords=8, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`

/** pg_trgm can only use its index for a pattern holding a trigram: 3 letters or digits in a row. */
export function guestPattern(term: string): string | null {
  if (!/[\p{L}\p{N}]{3}/u.test(term)) return null
  return `%${term.replace(/[\\%_]/g, '\\$&')}%`
}

/**
 * A word in at least this share of messages (per the column statistics) sends the search to a
 * plan made for the word: see wordStats below and docs/search.md.
 */
export const FREQUENT_WORD_SHARE = 0.005
const STATS_TTL_MS = 10 * 60_000

/**
 * The most common lexemes of messages.search and their share of rows, from pg_stats (what
 * ANALYZE / autovacuum gathered; the planner reads the same numbers). Cached per pool for
 * STATS_TTL_MS; a failed read counts as "no frequent words" (the search still works, only the
 * plan choice differs).
 */
const statsCache = new WeakMap<Pool, { at: number; words: Promise<Map<string, number>> }>()
export function wordStats(sql: Pool, now = Date.now()): Promise<Map<string, number>> {
  const cached = statsCache.get(sql)
  if (cached && now - cached.at < STATS_TTL_MS) return cached.words
  const words = sql<{ word: string; freq: number }[]>`
    SELECT u.word, u.freq::float8 AS freq
    FROM pg_stats s,
         unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS u(word, freq)
    WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'search'
      AND u.word IS NOT NULL`
    .then((rows) => new Map(rows.map((r) => [r.word, r.freq])))
    .catch(() => new Map<string, number>())
  statsCache.set(sql, { at: now, words })
  return words
}

/** Forget the cached statistics (tests, after ANALYZE). */
export function resetWordStats(sql: Pool): void {
  statsCache.delete(sql)
}

/**
 * Whether q holds a word frequent enough that the plan should be made for it. The words are
 * split roughly like the 'simple' configuration does (lower case, letters and digits); a miss
 * only changes the plan, never the result.
 */
export function hasFrequentWord(q: string, stats: Map<string, number>): boolean {
  for (const w of q.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (w && (stats.get(w) ?? 0) >= FREQUENT_WORD_SHARE) return true
  }
  return false
}

/**
 * Full-text search over a workspace's message bodies plus guest name / e-mail substrings.
 *
 * Candidates (bounded, see docs/search.md): at most SEARCH_CANDIDATE_LIMIT matching messages
 * from the GIN index (workspace_id, search) and as many conversations of matching guests from
 * the trigram indexes. A conversation's rank = its best message's ts_rank (+ GUEST_SCORE for a
 * guest match), rounded to 6 decimals so the cursor carries it exactly. Order: rank DESC, id
 * DESC (UUIDv7: newer first among equals); pages follow a (rank, id) keyset inside the
 * candidate set. Excerpts are computed for the returned page only.
 */
export async function searchConversations(ctx: Ctx, args: { q: string; limit: number; cursor?: string }): Promise<SearchResult> {
  const { sql, config } = ctx
  // q is data, always a bound parameter (NUL was refused before validation: plugins/input.ts).
  const q = args.q
  const term = q.trim()
  const params = { q: createHash('sha256').update(q).digest('base64url').slice(0, 22) }
  const codec = ctx.cursor
  let after: { rank: string; id: string } | null = null
  if (args.cursor) {
    const [rank, id] = codec.decode(args.cursor, params)
    if (typeof rank !== 'string' || !RANK.test(rank) || typeof id !== 'string' || !isUuid(id)) {
      throw invalidCursor()
    }
    after = { rank, id }
  }
  const ws = memberOf(ctx).workspaceId
  const cap = config.SEARCH_CANDIDATE_LIMIT
  const pattern = guestPattern(term)

  // Bound parameters, numbered as they are first used ($1, $2, ...).
  const values: (string | number)[] = []
  const bind = (v: string | number): string => {
    values.push(v)
    return `$${values.length}`
  }
  const Q = bind(q)
  const WS = bind(ws)
  const tsq = `websearch_to_tsquery('simple', ${Q})`

  const guestHits = pattern
    ? `
        UNION ALL
        SELECT conversation_id, r, false FROM (
          SELECT c.id AS conversation_id,
                 CASE WHEN lower(g.name) = lower(${bind(term)}) OR lower(g.email) = lower($${values.length})
                      THEN ${2 * GUEST_SCORE}::float8 ELSE ${GUEST_SCORE}::float8 END AS r
          FROM guests g
          JOIN conversations c ON c.guest_id = g.id AND c.workspace_id = ${WS} AND c.deleted_at IS NULL
          WHERE g.workspace_id = ${WS} AND (g.name ILIKE ${bind(pattern)} OR g.email ILIKE $${values.length})
          LIMIT ${bind(cap)}
        ) gh`
    : ''
  const afterCursor = after ? `AND (r.rank, r.id) < (${bind(after.rank)}::numeric, ${bind(after.id)}::uuid)` : ''

  type Row = ConversationRecord & { rank: string; messageMatch: boolean; headline: string | null }
  // The excerpt (newest matching message, ts_headline) is computed in the same statement for
  // the returned page only (n <= limit), one LIMIT 1 lookup on messages_conversation_idx each.
  const text = `
    WITH hits AS (
      SELECT m.conversation_id, ts_rank(m.search, ${tsq})::float8 AS r, true AS message
      FROM messages m
      WHERE m.workspace_id = ${WS} AND m.search @@ ${tsq}
      LIMIT ${bind(cap)}
    ),
    ranked AS (
      SELECT conversation_id AS id, bool_or(message) AS message,
             round((coalesce(max(r) FILTER (WHERE message), 0) + coalesce(max(r) FILTER (WHERE NOT message), 0))::numeric, 6) AS rank
      FROM (SELECT conversation_id, r, message FROM hits ${guestHits}) u
      GROUP BY conversation_id
    ),
    page AS (
      SELECT r.id, r.rank, r.message, row_number() OVER (ORDER BY r.rank DESC, r.id DESC) AS n
      FROM ranked r JOIN conversations c ON c.id = r.id
      WHERE c.workspace_id = ${WS} AND c.deleted_at IS NULL ${afterCursor}
      ORDER BY r.rank DESC, r.id DESC
      LIMIT ${bind(args.limit + 1)}
    )
    SELECT ${CONVERSATION_SELECT}, p.rank::text AS rank, p.message AS "messageMatch", hl.headline
    FROM ${CONVERSATION_FROM}
    JOIN page p ON p.id = c.id
    LEFT JOIN LATERAL (
      SELECT ts_headline('simple', translate(x.body, ${bind(START + STOP)}, ''), ${tsq}, ${bind(HEADLINE_OPTIONS)}) AS headline
      FROM (SELECT m.body FROM messages m
            WHERE p.message AND p.n <= ${bind(args.limit)} AND m.conversation_id = p.id AND m.search @@ ${tsq}
            ORDER BY m.created_at DESC, m.id DESC LIMIT 1) x
    ) hl ON true
    ORDER BY p.rank DESC, p.id DESC`
  // Two ways to run the same statement, same result:
  // - usually prepared: the generic plan (GIN for whatever word) is planned once per
  //   connection, so a search costs its execution only (about 1 ms of PostgreSQL CPU for a rare
  //   word at 5M messages, against 2.2 ms when planned every time);
  // - for a word the statistics call frequent, unnamed (unprepared): PostgreSQL plans an
  //   unnamed statement with the bound values, and websearch_to_tsquery is immutable, so the
  //   planner folds the query text into a constant, sees the word's frequency and can pick a
  //   scan that stops after SEARCH_CANDIDATE_LIMIT hits instead of a bitmap of every match.
  // The frequent path's early-stopping Seq Scan must start at block 0 every time: on a table
  // larger than shared_buffers / 4, PostgreSQL lets a scan join one already running
  // (synchronize_seqscans), which would change the candidate set between two pages.
  const frequent = hasFrequentWord(term, await wordStats(sql))
  const rows = frequent
    ? await sql.begin(async (tx) => {
        const [, found] = await Promise.all([
          tx`SET LOCAL synchronize_seqscans = off`,
          tx.unsafe<Row[]>(text, values, { prepare: false }),
        ])
        return found
      })
    : await sql.unsafe<Row[]>(text, values, { prepare: true })

  const page = rows.slice(0, args.limit)

  const data = page.map((r) => {
    let match = r.headline ? highlight(r.headline) : undefined
    if (!match) {
      if (pattern && r.guestName.toLowerCase().includes(term.toLowerCase())) match = highlightSubstring(r.guestName, term)
      else if (pattern && r.guestEmail?.toLowerCase().includes(term.toLowerCase())) match = highlightSubstring(r.guestEmail, term)
      else match = escapeHtml(r.lastMessagePreview ?? '')
    }
    return { ...toConversationView(r), match }
  })
  const last = page[page.length - 1]
  const nextCursor = rows.length > args.limit && last ? codec.encode(params, [last.rank, last.id]) : null
  return { data, nextCursor }
}
