import { createHash } from 'node:crypto'
import type postgres from 'postgres'
import type { Config } from '../config.js'
import type { ConversationView } from '../../schemas/conversations.js'
import { cursorCodec } from '../cursor.js'
import { badRequest } from '../errors.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, toConversationView, type ConversationRecord } from '../conversations/view.js'
import { escapeHtml } from '../transcripts/render.js'
import { highlight, highlightSubstring, START, STOP } from './highlight.js'

export interface SearchResult {
  data: (ConversationView & { match: string })[]
  nextCursor: string | null
}

/** Score of a conversation whose guest's name or e-mail contains the query (exact: twice that). */
const GUEST_SCORE = 1

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const RANK = /^\d{1,6}(\.\d{1,6})?$/

const HEADLINE_OPTIONS = `StartSel=${START}, StopSel=${STOP}, MaxWords=24, MinWords=8, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`

/** pg_trgm can only use its index for a pattern holding a trigram: 3 letters or digits in a row. */
export function guestPattern(term: string): string | null {
  if (!/[\p{L}\p{N}]{3}/u.test(term)) return null
  return `%${term.replace(/[\\%_]/g, '\\$&')}%`
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
export async function searchConversations(
  sql: postgres.Sql,
  config: Config,
  args: { workspaceId: string; q: string; limit: number; cursor?: string },
): Promise<SearchResult> {
  // q is data, always a bound parameter (NUL was refused before validation: plugins/errors.ts).
  const q = args.q
  const term = q.trim()
  const params = { q: createHash('sha256').update(q).digest('base64url').slice(0, 22) }
  const codec = cursorCodec(config)
  let after: { rank: string; id: string } | null = null
  if (args.cursor) {
    const [rank, id] = codec.decode(args.cursor, params)
    if (typeof rank !== 'string' || !RANK.test(rank) || typeof id !== 'string' || !UUID.test(id)) {
      throw badRequest('Invalid cursor', 'INVALID_CURSOR')
    }
    after = { rank, id }
  }
  const ws = args.workspaceId
  const cap = config.SEARCH_CANDIDATE_LIMIT
  const pattern = guestPattern(term)

  const guestHits = pattern
    ? sql`
        UNION ALL
        SELECT conversation_id, r, false FROM (
          SELECT c.id AS conversation_id,
                 CASE WHEN lower(g.name) = lower(${term}) OR lower(g.email) = lower(${term})
                      THEN ${2 * GUEST_SCORE}::float8 ELSE ${GUEST_SCORE}::float8 END AS r
          FROM guests g
          JOIN conversations c ON c.guest_id = g.id AND c.workspace_id = ${ws} AND c.deleted_at IS NULL
          WHERE g.workspace_id = ${ws} AND (g.name ILIKE ${pattern} OR g.email ILIKE ${pattern})
          LIMIT ${cap}
        ) gh`
    : sql``
  const afterCursor = after ? sql`AND (r.rank, r.id) < (${after.rank}::numeric, ${after.id}::uuid)` : sql``

  type Row = ConversationRecord & { rank: string; messageMatch: boolean }
  // websearch_to_tsquery is immutable: with the query text bound, the planner folds it into a
  // constant and estimates the word's frequency from the column statistics. That lets it pick
  // the GIN index for a rare word and a scan that stops after SEARCH_CANDIDATE_LIMIT hits for a
  // very common one. force_custom_plan keeps the prepared statement from falling back to a
  // generic plan that cannot see the word.
  const rows = await sql.begin(async (tx) => {
    // Pipelined: the SET and the search leave in one round trip.
    const [, found] = await Promise.all([tx`SET LOCAL plan_cache_mode = force_custom_plan`, tx<Row[]>`
    WITH hits AS (
      SELECT m.conversation_id, ts_rank(m.search, websearch_to_tsquery('simple', ${q}))::float8 AS r, true AS message
      FROM messages m
      WHERE m.workspace_id = ${ws} AND m.search @@ websearch_to_tsquery('simple', ${q})
      LIMIT ${cap}
    ),
    ranked AS (
      SELECT conversation_id AS id, bool_or(message) AS message,
             round((coalesce(max(r) FILTER (WHERE message), 0) + coalesce(max(r) FILTER (WHERE NOT message), 0))::numeric, 6) AS rank
      FROM (SELECT conversation_id, r, message FROM hits ${guestHits}) u
      GROUP BY conversation_id
    ),
    page AS (
      SELECT r.id, r.rank, r.message
      FROM ranked r JOIN conversations c ON c.id = r.id
      WHERE c.workspace_id = ${ws} AND c.deleted_at IS NULL ${afterCursor}
      ORDER BY r.rank DESC, r.id DESC
      LIMIT ${args.limit + 1}
    )
    SELECT ${tx.unsafe(CONVERSATION_SELECT)}, p.rank::text AS rank, p.message AS "messageMatch"
    FROM ${tx.unsafe(CONVERSATION_FROM)}
    JOIN page p ON p.id = c.id
    ORDER BY p.rank DESC, p.id DESC`])
    return found
  })

  const page = rows.slice(0, args.limit)
  const headlines = new Map<string, string>()
  const withMessages = page.filter((r) => r.messageMatch).map((r) => r.id)
  if (withMessages.length > 0) {
    // The newest matching message of each conversation on this page, highlighted. The inner
    // LIMIT 1 runs before ts_headline, so a long conversation costs one headline.
    const hl = await sql<{ id: string; headline: string | null }[]>`
      WITH query AS MATERIALIZED (SELECT websearch_to_tsquery('simple', ${q}) AS tsq)
      SELECT p.id::text AS id,
             (SELECT ts_headline('simple', translate(x.body, ${START + STOP}, ''), query.tsq, ${HEADLINE_OPTIONS})
              FROM (SELECT m.body FROM messages m
                    WHERE m.conversation_id = p.id AND m.search @@ query.tsq
                    ORDER BY m.created_at DESC, m.id DESC LIMIT 1) x) AS headline
      FROM unnest(${withMessages}::uuid[]) AS p(id), query`
    for (const h of hl) if (h.headline) headlines.set(h.id, highlight(h.headline))
  }

  const data = page.map((r) => {
    let match = headlines.get(r.id)
    if (!match) {
      if (pattern && r.guestName.toLowerCase().includes(term.toLowerCase())) match = highlightSubstring(r.guestName, term)
      else if (pattern && r.guestEmail.toLowerCase().includes(term.toLowerCase())) match = highlightSubstring(r.guestEmail, term)
      else match = escapeHtml(r.lastMessagePreview ?? '')
    }
    return { ...toConversationView(r), match }
  })
  const last = page[page.length - 1]
  const nextCursor = rows.length > args.limit && last ? codec.encode(params, [last.rank, last.id]) : null
  return { data, nextCursor }
}
