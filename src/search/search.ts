import { hiddenTeams } from '../conversations/visibility.js'
import { createHash } from 'node:crypto'
import { memberOf, type Ctx } from '../context.js'
import { keyPartIs, type Page } from '../cursor.js'
import type { Pool, Sql } from '../db/client.js'
import type { ConversationView } from '../../schemas/conversations.js'
import { invalidCursor } from '../errors.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, toConversationView, type ConversationRecord } from '../conversations/view.js'
import { escapeHtml } from '../html.js'
import { highlight, highlightSubstring, START, STOP } from './highlight.js'

export type SearchResult = Page<ConversationView & { match: string }>

/**
 * Candidate chunks ranked together: the newest SEARCH_WINDOW chunks that may match form a
 * window, ranked by relevance; the next window holds the next older ones (docs/search.md).
 */
export const SEARCH_WINDOW = 50

/** Score of a conversation whose guest's name or e-mail contains the query; an exact one: twice that. */
const GUEST_SCORE = 1

const RANK = /^\d{1,6}(\.\d{1,6})?$/

const HEADLINE_OPTIONS = `StartSel=${START}, StopSel=${STOP}, MaxWords=24, MinWords=8, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`

/** pg_trgm can only use its index for a pattern holding a trigram: 3 letters or digits in a row. */
export function guestPattern(term: string): string | null {
  if (!/[\p{L}\p{N}]{3}/u.test(term)) return null
  return `%${term.replace(/[\\%_]/g, '\\$&')}%`
}

/**
 * Where a page starts: in the guest phase after (rank, id), or in a window of message candidates.
 * `shownGuests`: the guest phase showed conversations, so the message phase leaves out those whose
 * guest matches (shown already); when it showed none there is nothing to leave out, and the
 * ranking skips the test (a primary-key probe of every candidate's guest).
 */
type Position =
  | { phase: 'g'; after: Keyset | null }
  | { phase: 'm'; window: WindowStart | null; after: Keyset | null; shownGuests: boolean }
interface Keyset {
  rank: string
  id: string
}
/** Candidates of a window are the chunks strictly older than this one (null: from the newest). */
export interface WindowStart {
  at: string
  id: string
  seq: number
}

type Row = ConversationRecord & { rank: string; headline: string | null }

function encodePosition(p: Position): (string | number | null)[] {
  const after = p.after ? [p.after.rank, p.after.id] : [null, null]
  if (p.phase === 'g') return ['g', ...after]
  return ['m', p.window?.at ?? null, p.window?.id ?? null, p.window?.seq ?? null, ...after, p.shownGuests ? 1 : 0]
}

function decodePosition(key: unknown[]): Position {
  const keyset = (rank: unknown, id: unknown): Keyset | null => {
    if (rank === null && id === null) return null
    if (typeof rank !== 'string' || !RANK.test(rank) || !keyPartIs('uuid', id)) throw invalidCursor()
    return { rank, id: id as string }
  }
  if (key[0] === 'g' && key.length === 3) return { phase: 'g', after: keyset(key[1], key[2]) }
  // Six parts: a cursor issued before `shownGuests` (its pages left guest matches out, as they still do).
  if (key[0] === 'm' && (key.length === 6 || (key.length === 7 && (key[6] === 0 || key[6] === 1)))) {
    const [, at, id, seq] = key
    let window: WindowStart | null = null
    if (at !== null || id !== null || seq !== null) {
      if (!keyPartIs('timestamp', at) || !keyPartIs('uuid', id) || !keyPartIs('int', seq)) throw invalidCursor()
      window = { at: at as string, id: id as string, seq: seq as number }
    }
    return { phase: 'm', window, after: keyset(key[4], key[5]), shownGuests: key[6] !== 0 }
  }
  throw invalidCursor()
}

/**
 * Full-text search over a workspace's message bodies plus guest name / e-mail substrings.
 *
 * Order (docs/search.md): first the conversations whose guest matches (exact name / e-mail
 * first, then newest), then the message matches newest-first in windows of SEARCH_WINDOW
 * candidate chunks, each window ranked by the conversation's best message (ts_rank), ties
 * newest conversation first. A page costs at most a few windows, whatever the word's frequency;
 * a page that examined SEARCH_CANDIDATE_LIMIT candidates without filling up ends early with a
 * cursor ("show older"). Searches run on their own small pool (ctx.searchSql), so they queue
 * among themselves and never hold the connections the inbox reads with.
 */
export async function searchConversations(ctx: Ctx, args: SearchArgsIn): Promise<SearchResult> {
  // The shared page is the workspace's; a private team's conversations leave it for whoever may
  // not see them (src/conversations/visibility.ts), after the shared execution. A page may then
  // hold fewer items than `limit`; its cursor is unchanged.
  const [page, hidden] = await Promise.all([sharedSearch(ctx, args), hiddenTeams(ctx)])
  if (hidden.length === 0) return page
  const skip = new Set(hidden)
  return { ...page, data: page.data.filter((c) => !c.teamId || !skip.has(c.teamId)) }
}

function sharedSearch(ctx: Ctx, args: SearchArgsIn): Promise<SearchResult> {
  // Identical searches in flight share one execution: a page depends only on the workspace and
  // the arguments (no field of it is per member), so a request that arrives while the same page
  // is being computed takes that result, at most one search's duration old. Agents of one
  // workspace typing the same word at once cost the database one search (docs/search.md).
  let flights = inFlight.get(ctx.searchSql)
  if (!flights) inFlight.set(ctx.searchSql, (flights = new Map()))
  const key = JSON.stringify([memberOf(ctx).workspaceId, args.q, args.limit, args.cursor ?? null])
  const running = flights.get(key)
  if (running) return running
  const search = runSearch(ctx, args).finally(() => flights.delete(key))
  flights.set(key, search)
  return search
}

interface SearchArgsIn {
  q: string
  limit: number
  cursor?: string
}

/** Searches being computed, by pool (one per process, or per test app) and page. */
const inFlight = new WeakMap<Pool, Map<string, Promise<SearchResult>>>()

/** How many distinct searches this pool is computing (tests wait on it). */
export function searchesInFlight(sql: Pool): number {
  return inFlight.get(sql)?.size ?? 0
}

/**
 * Behind a transaction pooler (DATABASE_POOLER=transaction) a connection's settings do not
 * follow the next statement, so the search runs in one transaction that sets SEARCH_SESSION
 * locally first; direct connections were given them at start (src/deps.ts).
 */
function runSearch(ctx: Ctx, args: SearchArgsIn): Promise<SearchResult> {
  // On the read replica while it is online and caught up, else the primary's search pool (src/db/replica.ts).
  return ctx.reads.run('search', (pool) => {
    if (ctx.config.DATABASE_POOLER !== 'transaction') return searchOn(ctx, pool, pool, args)
    return pool.begin(async (tx) => {
      for (const [name, value] of Object.entries(SEARCH_SESSION)) await tx`SELECT set_config(${name}, ${value}, true)`
      return searchOn(ctx, pool, tx, args)
    }) as Promise<SearchResult>
  })
}

async function searchOn(ctx: Ctx, pool: Pool, sql: Sql, args: SearchArgsIn): Promise<SearchResult> {
  // q is data, always a bound parameter (NUL was refused before validation: plugins/input.ts).
  const q = args.q
  const term = q.trim()
  const params = { q: createHash('sha256').update(q).digest('base64url').slice(0, 22) }
  const pattern = guestPattern(term)
  let pos: Position = args.cursor ? decodePosition(ctx.cursor.decode(args.cursor, params)) : pattern ? { phase: 'g', after: null } : { phase: 'm', window: null, after: null, shownGuests: false }
  const ws = memberOf(ctx).workspaceId
  const s: SearchArgs = { pool, sql, ws, q, term, pattern }
  const rows: Row[] = []
  let next: Position | null = null

  // The first page asks for guests and for the newest candidate window at once (two statements
  // in flight instead of two round trips one after the other); unused when guests fill the page.
  let firstWindow: Promise<Candidate[]> | null = null
  if (pos.phase === 'g') {
    const need = args.limit
    if (!pos.after) {
      firstWindow = candidateWindow(s, null)
      firstWindow.catch(() => {})
    }
    const found = pattern ? await guestPage(s, ctx.config.SEARCH_CANDIDATE_LIMIT, pos.after, need) : []
    rows.push(...found.slice(0, need))
    if (found.length > need) next = { phase: 'g', after: keysetOf(rows[rows.length - 1]) ?? pos.after }
    else pos = { phase: 'm', window: null, after: null, shownGuests: found.length > 0 || pos.after !== null }
  }
  if (!next && pos.phase === 'm') {
    let { window, after } = pos
    const { shownGuests } = pos
    let examined = 0
    for (;;) {
      const need = args.limit - rows.length
      const candidates = await (window === null && firstWindow ? firstWindow : candidateWindow(s, window))
      if (candidates.length === 0) break
      const found = await rankWindow(s, candidates, after, need, shownGuests)
      const taken = found.slice(0, need)
      rows.push(...taken)
      if (found.length > need) {
        next = { phase: 'm', window, after: keysetOf(taken[taken.length - 1]) ?? after, shownGuests }
        break
      }
      if (candidates.length < SEARCH_WINDOW) break
      const last = candidates[candidates.length - 1]!
      window = { at: last.at, id: last.id, seq: last.seq }
      after = null
      examined += candidates.length
      if (rows.length === args.limit || examined >= ctx.config.SEARCH_CANDIDATE_LIMIT) {
        next = { phase: 'm', window, after: null, shownGuests }
        break
      }
    }
  }

  const data = rows.map((r) => {
    let match = r.headline ? highlight(r.headline) : undefined
    if (!match) {
      if (pattern && r.guestName.toLowerCase().includes(term.toLowerCase())) match = highlightSubstring(r.guestName, term)
      else if (pattern && r.guestEmail?.toLowerCase().includes(term.toLowerCase())) match = highlightSubstring(r.guestEmail, term)
      else match = escapeHtml(r.lastMessagePreview ?? '')
    }
    return { ...toConversationView(r), match }
  })
  return { data, nextCursor: next ? ctx.cursor.encode(params, encodePosition(next)) : null }
}

interface SearchArgs {
  /** The pool (what per-pool caches are keyed by) and where the statements run (it, or a transaction of it). */
  pool: Pool
  sql: Sql
  ws: string
  q: string
  term: string
  pattern: string | null
}

const keysetOf = (r: Row | undefined): Keyset | null => (r ? { rank: r.rank, id: r.id } : null)

/** Bound parameters, numbered as they are first used ($1, $2, ...). */
function binder() {
  const values: (string | number | string[])[] = []
  const bind = (v: string | number | string[]): string => {
    values.push(v)
    return `$${values.length}`
  }
  return { values, bind }
}

/**
 * The tsquery of the search text in the two prepared statements, computed once per execution:
 * as a scalar sub-select it is an InitPlan. Written as the bare call, their generic plans (which
 * PostgreSQL keeps after five executions) evaluated websearch_to_tsquery for every message row
 * they filtered and ranked (~350 calls for 50 candidates): the ranking took 1.63-1.87 ms of
 * backend CPU instead of 1.33-1.57 (docs/search.md, "Planning and the guest test").
 */
const textQuery = (q: string): string => `(SELECT websearch_to_tsquery('simple', ${q}))`

/**
 * The excerpt of a page row: ts_headline of the conversation's newest matching message, for
 * the rows the page returns only (n <= need). `carried`: the source row holds that message's
 * body already (the ranking read it); else one LIMIT 1 lookup on messages_conversation_idx.
 */
function headlineJoin(bind: (v: string | number) => string, tsq: string, need: number, carried: boolean): string {
  const body = carried
    ? `SELECT p.body WHERE p.n <= ${bind(need)}`
    : `SELECT m.body FROM messages m
            WHERE p.n <= ${bind(need)} AND m.conversation_id = p.id AND m.search @@ ${tsq}
            ORDER BY m.created_at DESC, m.id DESC LIMIT 1`
  return `
    LEFT JOIN LATERAL (
      SELECT ts_headline('simple', translate(x.body, ${bind(START + STOP)}, ''), ${tsq}, ${bind(HEADLINE_OPTIONS)}) AS headline
      FROM (${body}) x
    ) hl ON true`
}

/**
 * The end of both ranked statements: the rows of `source` (id, rank; with `carried`, also the
 * body of the conversation's newest matching message) after `after`, ordered (rank DESC, id DESC),
 * need + 1 of them, as conversation rows with the excerpt. `live`: a condition on the
 * conversation `c` (and what `live.join` joins to it) that a row must pass, tested in that order
 * until the page is full (OFFSET 0 keeps the order: the planner cannot push the test below it).
 */
function pageOf(
  source: string,
  bind: (v: string | number) => string,
  tsq: string,
  after: Keyset | null,
  need: number,
  opts: { carried: boolean; live?: { join: string; where: string } },
): string {
  const { carried, live } = opts
  const tests = [
    after ? `(r.rank, r.id) < (${bind(after.rank)}::numeric, ${bind(after.id)}::uuid)` : null,
    live ? `EXISTS (SELECT 1 FROM conversations c ${live.join} WHERE c.id = r.id AND ${live.where})` : null,
  ].filter(Boolean)
  return `
    page AS (
      SELECT r.id, r.rank, ${carried ? 'r.body, ' : ''}row_number() OVER (ORDER BY r.rank DESC, r.id DESC) AS n
      FROM (SELECT * FROM ${source} ORDER BY rank DESC, id DESC OFFSET 0) r
      ${tests.length ? `WHERE ${tests.join(' AND ')}` : ''}
      ORDER BY r.rank DESC, r.id DESC
      LIMIT ${bind(need + 1)}
    )
    SELECT ${CONVERSATION_SELECT}, p.rank::text AS rank, hl.headline
    FROM ${CONVERSATION_FROM}
    JOIN page p ON p.id = c.id
    ${headlineJoin(bind, tsq, need, carried)}
    ORDER BY p.rank DESC, p.id DESC`
}

/**
 * Conversations whose guest's name or e-mail contains the text (pg_trgm GIN indexes), at most
 * `cap` of them, ordered (score DESC, id DESC), the page after `after`: need + 1 rows.
 */
async function guestPage(s: SearchArgs, cap: number, after: Keyset | null, need: number): Promise<Row[]> {
  // First the matching guests alone: unprepared, so always planned with the pattern (a prepared
  // statement switches to its generic plan after five runs once the varying patterns' custom plans
  // cost more on average, and the generic plan for `ILIKE $n ... LIMIT` is a sequential scan of
  // every guest: 340 ms at 800,000 guests instead of 0.1 ms). Planned alone, guests take ~0.23 ms;
  // joined with conversations (every index of that table considered) ~0.61 ms, on every search,
  // and most searches find no guest (docs/search.md, "The guest hits").
  const matching = (live: boolean) => {
    const { values, bind } = binder()
    const WS = bind(s.ws)
    const text = `
    SELECT g.id,
           CASE WHEN lower(g.name) = lower(${bind(s.term)}) OR lower(g.email) = lower($${values.length})
                THEN ${2 * GUEST_SCORE} ELSE ${GUEST_SCORE} END AS rank
    FROM guests g
    WHERE g.workspace_id = ${WS} AND (g.name ILIKE ${bind(s.pattern!)} OR g.email ILIKE $${values.length})
      ${live ? `AND EXISTS (SELECT 1 FROM conversations c WHERE c.guest_id = g.id AND c.workspace_id = ${WS} AND c.deleted_at IS NULL)` : ''}
    LIMIT ${bind(cap)}`
    return s.sql.unsafe<{ id: string; rank: number }[]>(text, values, { prepare: false })
  }
  let hits = await matching(false)
  if (hits.length === 0) return []
  // The cap counts conversations: when the guests reached it, those beyond it may be the ones with
  // live conversations, so the guests are read again, only those with one (`cap` of them hold at
  // least `cap` conversations).
  if (hits.length === cap) hits = await matching(true)
  // Their live conversations, at most `cap`, and the page: prepared like the ranking statement
  // (its plan is driven by unnest of the ids).
  const { values, bind } = binder()
  const tsq = textQuery(bind(s.q))
  const WS = bind(s.ws)
  const text = `
    WITH gh AS (
      SELECT c.id, x.rank::numeric AS rank
      FROM unnest(${bind(hits.map((h) => h.id))}::uuid[], ${bind(hits.map((h) => String(h.rank)))}::int[]) AS x(guest_id, rank)
      JOIN conversations c ON c.guest_id = x.guest_id AND c.workspace_id = ${WS} AND c.deleted_at IS NULL
      LIMIT ${bind(cap)}
    ),
    ${pageOf('gh', bind, tsq, after, need, { carried: false })}`
  return s.sql.unsafe<Row[]>(text, values, { prepare: true })
}

interface Candidate {
  id: string
  at: string
  seq: number
}

/**
 * The newest SEARCH_WINDOW chunks older than `window` whose document may match, one per
 * conversation (its newest such chunk), by the plan choosePlan chose (candidateStatement writes
 * each so that its plan is the only sensible one). Unprepared on purpose: PostgreSQL plans an
 * unnamed statement with the bound values and folds search_query(ws, q) (immutable) to a
 * constant, the GIN index's search key; planning this one-table statement costs a fraction of a
 * millisecond.
 */
function candidateWindow(s: SearchArgs, window: WindowStart | null): Promise<Candidate[]> {
  return readCandidates(s.pool, s.sql, s.ws, s.q, window)
}

/**
 * candidateWindow's rows (bench/search-plan.ts forces each plan on the same words). The period
 * plan reads the posting lists of the window's period and the one before (newest first, each
 * conversation at its newest matching chunk, as the walk), and when those hold fewer than a window,
 * the posting list of everything older: the same rows in the same order as the walk or the list.
 */
export async function readCandidates(
  pool: Pool,
  run: Sql,
  ws: string,
  q: string,
  window: WindowStart | null,
  force?: { plan: CandidatePlan },
): Promise<Candidate[]> {
  const plan = force?.plan ?? choosePlan(await chunkStats(pool, run), ws, q, windowTime(window)).plan
  if (plan !== 'period') {
    const st = candidateStatement(ws, q, window, plan)
    return run.unsafe<Candidate[]>(st.text, st.values, { prepare: false })
  }
  // The periods are counted back from the window's start, or from now on the first page (a
  // chunk in a later period than now's is read by the first statement's own branch).
  const from = window?.at ?? new Date().toISOString()
  const rows: Candidate[] = []
  for (let back = 0; back < PERIODS_READ; back++) {
    const st = candidateStatement(ws, q, window, 'period', { from, back, limit: SEARCH_WINDOW - rows.length })
    rows.push(...(await run.unsafe<Candidate[]>(st.text, st.values, { prepare: false })))
    if (rows.length === SEARCH_WINDOW) return rows
  }
  const rest = candidateStatement(ws, q, window, 'list', { from, back: PERIODS_READ - 1, limit: SEARCH_WINDOW - rows.length })
  rows.push(...(await run.unsafe<Candidate[]>(rest.text, rest.values, { prepare: false })))
  return rows
}

/**
 * The first candidate statement search runs and the plan it follows (bench/scenarios/search.ts
 * and bench/search-plan.ts EXPLAIN it). `force` sets the plan (bench/search-plan.ts compares the
 * plans on the same words).
 */
export async function candidateQuery(
  sql: Pool,
  ws: string,
  q: string,
  window: WindowStart | null,
  run: Sql = sql,
  force?: { plan: CandidatePlan },
) {
  const { plan } = force ?? choosePlan(await chunkStats(sql, run), ws, q, windowTime(window))
  const from = window?.at ?? new Date().toISOString()
  return { ...candidateStatement(ws, q, window, plan, plan === 'period' ? { from, back: 0, limit: SEARCH_WINDOW } : undefined), plan }
}

/**
 * What the planner cannot see: a tagged lexeme already names its workspace, but PostgreSQL
 * multiplies its frequency by the workspace filter's selectivity as if they were independent,
 * so a word in 22% of a small tenant's chunks looks rare there and gets a bitmap of all its
 * matches. We choose instead, from the same column statistics (pg_stats of search_chunks, cached
 * per pool for STATS_TTL_MS), by the word's matches in the workspace (choosePlan): walk
 * newest-first when they outnumber the chunks a walk reads for one window, AND the posting list
 * with a recent time range near that crossover, else let the GIN posting list answer. A wrong
 * guess only changes the plan.
 */
interface ChunkStats {
  total: number
  /** Share of chunks holding each tagged lexeme ("c70ac61b:refund"). */
  elems: Map<string, number>
  /** Share of chunks of each workspace; the smallest listed share bounds the unlisted ones. */
  workspaces: Map<string, number>
}
const STATS_TTL_MS = 10 * 60_000
const statsCache = new WeakMap<Pool, { at: number; stats: Promise<ChunkStats> }>()
/** Cached per pool; read through `run` (a search's transaction must not wait on its own pool). */
function chunkStats(pool: Pool, run: Sql = pool, now = Date.now()): Promise<ChunkStats> {
  const cached = statsCache.get(pool)
  if (cached && now - cached.at < STATS_TTL_MS) return cached.stats
  const stats = run<{ kind: string; key: string; freq: number }[]>`
    SELECT 'total' AS kind, '' AS key, greatest(reltuples, 0)::float8 AS freq FROM pg_class WHERE oid = 'search_chunks'::regclass
    UNION ALL
    SELECT 'elem', u.key, u.freq::float8 FROM pg_stats s,
           unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS u(key, freq)
    WHERE s.schemaname = current_schema() AND s.tablename = 'search_chunks' AND s.attname = 'doc' AND u.key IS NOT NULL
    UNION ALL
    SELECT 'ws', u.key, u.freq::float8 FROM pg_stats s,
           unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS u(key, freq)
    WHERE s.schemaname = current_schema() AND s.tablename = 'search_chunks' AND s.attname = 'workspace_id'`
    .then((rows) => {
      const out: ChunkStats = { total: 0, elems: new Map(), workspaces: new Map() }
      for (const r of rows) {
        if (r.kind === 'total') out.total = r.freq
        else if (r.kind === 'elem') out.elems.set(r.key, r.freq)
        else out.workspaces.set(r.key, r.freq)
      }
      return out
    })
    .catch((): ChunkStats => ({ total: 0, elems: new Map(), workspaces: new Map() }))
  statsCache.set(pool, { at: now, stats })
  return stats
}

/** Forget the cached statistics (tests, after ANALYZE). */
export function resetSearchStats(sql: Pool): void {
  statsCache.delete(sql)
}

/** search_tag() of migrations/…_issue19_search_chunks_sql.sql, in JS. */
const searchTag = (ws: string): string => createHash('md5').update(ws.toLowerCase()).digest('hex').slice(0, 8)

/** How a candidate window is read (candidateStatement). */
export type CandidatePlan = 'walk' | 'period' | 'list'

/**
 * The period plan reads this many 30-day periods' posting lists (the window's and the one
 * before) before the rest of the word's posting list: a word in 0.2% of the chunks fills a window
 * from them in a workspace that adds 25,000 chunks a period (docs/search.md, "Periods").
 */
const PERIODS_READ = 2
/**
 * What a walk row costs against a posting-list row: the walk reads each chunk's document and
 * matches it, the period plan reads one heap row per match to sort it by time. Measured at 1M
 * (`bench/search-plan.ts <db> plans`, backend CPU per window): ~3.9 µs a walked chunk, ~2.55 µs a
 * period's posting-list row (docs/search.md, "The guest hits, and walk or period").
 */
const WALK_ROW_COST = 1.5
/** The 30-day period of a time, as search_period() (migrations/…_issue31_search_functions_plpgsql.sql). */
const PERIOD_MS = 2_592_000_000
const periodOf = (at: number): number => Math.floor(at / PERIOD_MS)
/** Where a window starts (ms): its cursor's time, or now on the first page. */
const windowTime = (window: WindowStart | null): number => (window ? Date.parse(window.at) : Date.now())

/**
 * The walk or the period plan, by the rows each would read for the window: the walk
 * SEARCH_WINDOW / share chunks (each WALK_ROW_COST), the period plan the word's share of a recent
 * period's chunks (its posting list in the period the window starts in, or the one before, the
 * larger: the tag with the period is in every chunk of it, so the statistics count them). Without
 * those counts a period is taken to be the whole workspace. `from`: where the window starts (ms).
 */
export function choosePlan(stats: ChunkStats, ws: string, q: string, from = Date.now()): { plan: CandidatePlan; share: number } {
  // Words roughly as websearch_to_tsquery reads them: "-word" excluded, "or" joins (take the
  // most frequent side), otherwise all words must match (take the least frequent).
  const tokens = q.toLowerCase().split(/\s+/).filter(Boolean)
  const or = tokens.includes('or')
  const words = tokens.filter((t) => !t.startsWith('-') && t !== 'or').flatMap((t) => t.split(/[^\p{L}\p{N}]+/u).filter(Boolean))
  // Only negations: every chunk of the workspace is a candidate, so the walk's first 50 are its window.
  if (words.length === 0) return { plan: 'walk', share: 1 }
  if (stats.total <= 0) return { plan: 'period', share: 0 }
  const tag = searchTag(ws)
  const shares = words.map((w) => stats.elems.get(`${tag}:${w}`) ?? 0)
  const listed = stats.workspaces.get(ws.toLowerCase())
  const wsShare = listed ?? (stats.workspaces.size ? Math.min(...stats.workspaces.values()) : 1)
  const matches = (or ? Math.max(...shares) : Math.min(...shares)) * stats.total
  const chunks = wsShare * stats.total
  const share = Math.min(1, matches / chunks)
  if (share === 0) return { plan: 'period', share }
  const p = periodOf(from)
  const periodShare = Math.max(stats.elems.get(`${tag}/${p}`) ?? 0, stats.elems.get(`${tag}/${p - 1}`) ?? 0)
  const periodChunks = periodShare > 0 ? Math.min(chunks, periodShare * stats.total) : chunks
  const walkRows = (SEARCH_WINDOW / share) * WALK_ROW_COST
  return { plan: walkRows < share * periodChunks ? 'walk' : 'period', share }
}

/**
 * Run-time settings of every search-pool connection. No parallel plans: a search reads a bounded
 * handful of rows, and starting a parallel worker (milliseconds of process start-up) cost more
 * than the whole search: at 1M conversations the rare word's posting list went parallel and took
 * 3.8 ms instead of 0.1 (docs/search.md). On a machine serving 50 searches at once there is no
 * idle core for a worker anyway.
 */
export const SEARCH_SESSION: Record<string, string> = { max_parallel_workers_per_gather: '0' }

/**
 * The candidate statement itself (exported for bench/search-plan.ts, which EXPLAINs exactly this).
 *
 * - walk: newest chunks first on search_chunks_recent_idx, each conversation once at its newest
 *   matching chunk (the anti-join), stopping after SEARCH_WINDOW hits. The match is written
 *   `coalesce(doc, '')` (doc is never null) so that the GIN index cannot serve it: the planner
 *   multiplies the tagged word's share by the workspace's as if they were independent and would
 *   otherwise take a common word for a rare one and read all its matches (docs/search.md);
 * - period: the walk's rows inside one 30-day period (`back` periods before the one holding
 *   `from`), from that period's posting list (search_query_in); with `back` 0 and no window, also
 *   any chunk of a later period than `from`'s (a clock ahead of this one), by the recent index;
 * - list: every matching chunk of the workspace from the GIN index, each conversation's newest
 *   (DISTINCT ON), then the window. Written so that no index order serves the final ORDER BY ...
 *   LIMIT: otherwise the planner, misjudging a rare word's share, may walk the whole workspace
 *   newest-first looking for 50 hits that do not exist (444 ms at 1M conversations). With
 *   `period`, only what is older than the periods the period plan read.
 */
export function candidateStatement(
  ws: string,
  q: string,
  window: WindowStart | null,
  plan: CandidatePlan = 'list',
  period?: { from: string; back: number; limit: number },
): { text: string; values: (string | number)[] } {
  const values: (string | number)[] = []
  const bind = (v: string | number): string => {
    values.push(v)
    return `$${values.length}`
  }
  const WS = bind(ws)
  const Q = bind(q)
  const tq = `search_query(${WS}, ${Q})`
  const older = (at: string, id: string, seq: string) =>
    window ? `AND (${at}, ${id}, ${seq}) < (${bind(window.at)}::timestamptz, ${bind(window.id)}::uuid, ${bind(window.seq)}::int)` : ''
  const limit = bind(period?.limit ?? SEARCH_WINDOW)
  // The period `back` periods before `from`'s (-1: the one after), and where a period starts
  // (immutable functions of bound values: folded to constants when planned).
  const FROM = period ? bind(period.from) : ''
  const periodOf = (back: number) => `search_period(${FROM}::timestamptz) - ${bind(back)}`
  const periodStart = (back: number) => `search_period_start(${periodOf(back)})`
  // Each conversation once, at its newest matching chunk (the walk's and the period plan's anti-join).
  const newest = `NOT EXISTS (SELECT 1 FROM search_chunks n
                      WHERE n.conversation_id = ch.conversation_id AND n.seq > ch.seq AND n.doc @@ ${tq})`
  if (plan === 'list')
    return {
      text: `
    SELECT newest.id, newest.at, newest.seq
    FROM (SELECT DISTINCT ON (ch.conversation_id) ch.conversation_id AS id, ch.last_message_at AS at, ch.seq
          FROM search_chunks ch
          WHERE ch.workspace_id = ${WS} AND ch.doc @@ ${tq}
          ORDER BY ch.conversation_id, ch.seq DESC) newest
    WHERE true ${older('newest.at', 'newest.id', 'newest.seq')} ${period ? `AND newest.at < ${periodStart(period.back)}` : ''}
    ORDER BY newest.at DESC, newest.id DESC, newest.seq DESC
    LIMIT ${limit}`,
      values,
    }
  const order = 'ORDER BY ch.last_message_at DESC, ch.conversation_id DESC, ch.seq DESC'
  if (plan === 'period') {
    // The period's posting list first, whole (MATERIALIZED: the LIMIT below must not turn it into
    // a walk of the recent index, which the planner picks for a word it thinks common and which
    // reads the whole workspace for a rare one), then newest first, each row checked for a newer
    // matching chunk of its conversation (the walk's anti-join, as a LATERAL probe so that it runs
    // only until the window is full instead of as a hash of the word's whole posting list). The
    // walk keeps NOT EXISTS: written as this LATERAL, its plan became a sort of every match
    // (`refund` at 1M: 44,823 rows, 1.5 s, against an ordered index scan stopping after 50).
    const cols = 'ch.conversation_id, ch.last_message_at, ch.seq'
    const later =
      period!.back === 0 && !window
        ? `UNION ALL SELECT ${cols} FROM search_chunks ch
           WHERE ch.workspace_id = ${WS} AND ch.last_message_at >= ${periodStart(-1)} AND ch.doc @@ ${tq}`
        : ''
    return {
      text: `
    WITH ch AS MATERIALIZED (
      SELECT ${cols} FROM search_chunks ch
      WHERE ch.workspace_id = ${WS} AND ch.doc @@ search_query_in(${WS}, ${Q}, ${periodOf(period!.back)})
        ${older('ch.last_message_at', 'ch.conversation_id', 'ch.seq')}
      ${later})
    SELECT ch.conversation_id AS id, ch.last_message_at AS at, ch.seq
    FROM (SELECT * FROM ch ${order}) ch
    LEFT JOIN LATERAL (SELECT 1 AS found FROM search_chunks n
                       WHERE n.conversation_id = ch.conversation_id AND n.seq > ch.seq AND n.doc @@ ${tq} LIMIT 1) newer ON true
    WHERE newer.found IS NULL
    ${order}
    LIMIT ${limit}`,
      values,
    }
  }
  return {
    text: `
    SELECT ch.conversation_id AS id, ch.last_message_at AS at, ch.seq
    FROM search_chunks ch
    WHERE ch.workspace_id = ${WS} AND coalesce(ch.doc, '') @@ ${tq} ${older('ch.last_message_at', 'ch.conversation_id', 'ch.seq')}
      AND ${newest}
    ${order}
    LIMIT ${limit}`,
    values,
  }
}

/**
 * One window's matches: each candidate conversation with a message matching the full query
 * (messages.search, through messages_conversation_idx), rank = its best message's ts_rank rounded
 * to 6 decimals (the cursor carries it exactly), with the body of its newest matching message
 * (the excerpt's, read here with the rest); ordered (rank DESC, id DESC) after `after`, need + 1
 * rows that are live, of this workspace and not already shown in the guest phase when it showed
 * any (`shownGuests`). Only the rows the page takes probe their conversation (~21 of 50).
 */
async function rankWindow(s: SearchArgs, candidates: Candidate[], after: Keyset | null, need: number, shownGuests: boolean): Promise<Row[]> {
  const { values, bind } = binder()
  const WS = bind(s.ws)
  const Q = bind(s.q)
  const tsq = textQuery(Q)
  const notGuest =
    s.pattern && shownGuests
      ? // COALESCE: a guest without an e-mail (null) must not turn the whole test into null and drop the row.
        `JOIN guests g ON g.id = c.guest_id AND NOT (g.name ILIKE ${bind(s.pattern)} OR COALESCE(g.email, '') ILIKE $${values.length})`
      : ''
  const text = `
    WITH ranked AS (
      SELECT cand.id, round(x.r::numeric, 6) AS rank, x.body
      FROM unnest(${bind(candidates.map((c) => c.id))}::uuid[]) AS cand(id)
      CROSS JOIN LATERAL (
        SELECT max(ts_rank(m.search, ${tsq}))::float8 AS r, (array_agg(m.body ORDER BY m.created_at DESC, m.id DESC))[1] AS body
        FROM messages m WHERE m.conversation_id = cand.id AND m.search @@ ${tsq}
      ) x
      WHERE x.r IS NOT NULL
    ),
    ${pageOf('ranked', bind, tsq, after, need, { carried: true, live: { join: notGuest, where: `c.workspace_id = ${WS} AND c.deleted_at IS NULL` } })}`
  return s.sql.unsafe<Row[]>(text, values, { prepare: true })
}
