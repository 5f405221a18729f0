import type { RawRequest } from 'autocannon'
import type { Area, AreaScenario, BenchRun } from '../lib/area.js'
import { measure, runCannon } from '../lib/load.js'
import { resultOf, ratio } from '../lib/area.js'
import type { Pool } from '../lib/db.js'
import { fmtInt, step } from '../lib/progress.js'
import { target } from '../lib/report.js'
import { buildVocabulary, COMMON_WORD, FREQUENT_WORD, RARE_TOKEN } from '../lib/words.js'
import { candidateQuery, SEARCH_SESSION } from '../../src/search/search.js'

/**
 * GET /conversations/search for a rare, a common and a frequent word (50 connections), and the
 * rare one from a single client; the rare word is also timed straight in SQL, with the full-text
 * index and with ILIKE, before any write scenario adds messages.
 */
export const search: Area = {
  name: 'search',
  ids: [
    { id: 'search-rare', about: '`GET /conversations/search?q=quokkaflux` (about 25 messages)' },
    { id: 'search-common', about: '`?q=refund` (about 1.7% of messages)' },
    { id: 'search-frequent', about: '`?q=order` (one of the most frequent words, about 5%)' },
    { id: 'search-rare-1c', about: 'the rare-word search from a single connection: its latency without queueing' },
    {
      id: 'search-varied',
      about:
        'a different word on every request (2,000 words of the seeded vocabulary, ranks 20-2,019, from `order`-like to rare), so no two searches in flight are the same: the per-search cost, without the sharing of identical searches',
    },
    {
      id: 'list-under-search',
      optIn: true,
      about:
        '`GET /conversations` page 1 at 50 connections while another 50 connections search, a different word each (as `search-varied`): what searches cost the inbox (the pool isolation)',
    },
  ],
  async prepare(run, wanted) {
    const { sql, headers, seed, load } = run
    const workspaceId = seed.largest.id
    const searchFor = (id: string, label: string, q: string, extra: Partial<AreaScenario> = {}): AreaScenario => ({
      id,
      label: `GET /conversations/search ${label}`,
      kind: 'read',
      method: 'GET',
      path: `/conversations/search?q=${q}`,
      headers: headers.largest,
      fixedWord: true,
      ...extra,
    })
    const sqlChecks = wanted('search-rare') ? await searchVsIlike(sql, workspaceId) : undefined
    const prewarmed = wanted('search-varied') || wanted('list-under-search') ? await prewarm(sql) : undefined
    return {
      scenarios: [
        searchFor('search-rare', 'rare word', RARE_TOKEN),
        searchFor('search-common', 'common word', COMMON_WORD),
        searchFor('search-frequent', 'frequent word', FREQUENT_WORD),
        searchFor('search-rare-1c', 'rare word, 1 connection', RARE_TOKEN, { connections: 1, note: 'single client: latency without queueing' }),
        searchFor('search-varied', 'a different word each', VARIED_WORDS[0]!, {
          vary: variedSearch,
          note: `${fmtInt(VARIED_WORDS.length)} words in turn: no identical searches in flight; ${prewarmed ?? 'tables not prewarmed'}`,
        }),
        ...(wanted('list-under-search') ? [listUnderSearch(run, searchFor('x', 'x', VARIED_WORDS[0]!, { vary: variedSearch }))] : []),
      ],
      summary: sqlChecks
        ? [
            `messages with the search words in the largest workspace: rare ${fmtInt(sqlChecks.rareWordMessages)}, ` +
              `common ${fmtInt(sqlChecks.commonWordMessages)}, frequent ${fmtInt(sqlChecks.frequentWordMessages)} of ${fmtInt(sqlChecks.messagesInWorkspace)}`,
          ]
        : [],
      targets: (results) => {
        const rare = resultOf(results, 'search-rare')
        const rare1c = resultOf(results, 'search-rare-1c')
        return [
          // Issue 19's targets: the rare word p50 < 20 ms, the common and frequent words p99 < 100 ms.
          target(
            `search (rare word) p50 at ${load.connections} connections`,
            rare?.p50,
            '<',
            20,
            ' ms',
            rare1c ? `1 connection: p50 ${rare1c.p50} ms, p99 ${rare1c.p99} ms` : undefined,
          ),
          ...(['search-common', 'search-frequent'] as const).map((id) =>
            target(`${id} p99 at ${load.connections} connections`, resultOf(results, id)?.p99, '<', 100, ' ms'),
          ),
          // Issue 31: distinct searches (no sharing of identical ones), p99 < 100 ms and >= 500 searches/s.
          target(`search-varied p99 at ${load.connections} connections`, resultOf(results, 'search-varied')?.p99, '<', 100, ' ms'),
          target(`search-varied searches/s at ${load.connections} connections`, resultOf(results, 'search-varied')?.rps, '>=', 500, ''),
          // Like with like: the ILIKE query runs once with nothing else in flight, so it is compared
          // with the endpoint's single-client p50 (the whole HTTP request, more work than the SQL).
          target(
            `ILIKE query time ÷ search (rare word) p50 at ${rare1c ? '1 connection' : `${load.connections} connections`}`,
            ratio(sqlChecks?.ilikeMs, (rare1c ?? rare)?.p50),
            '>=',
            20,
            '×',
            sqlChecks
              ? `ILIKE ${fmtInt(sqlChecks.ilikeMs)} ms once; same query with the FTS index ${sqlChecks.ftsMs.toFixed(1)} ms` +
                  (rare?.p50 ? `; ÷ p50 at ${load.connections} conn.: ${(sqlChecks.ilikeMs / rare.p50).toPrecision(2)}×` : '')
              : undefined,
          ),
        ]
      },
      report: async () => ({
        explain: await explainSearch(sql, workspaceId).catch((err: Error) => ({ searchError: err.message })),
        data: { rareToken: RARE_TOKEN, commonWord: COMMON_WORD, frequentWord: FREQUENT_WORD, rareTokenMessages: seed.rareTokenMessages, sqlChecks },
      }),
    }
  },
}

/** The seeded vocabulary's words of ranks 20-2,019 (by frequency: `order`-like down to rare). */
const VARIED_WORDS = buildVocabulary().words.slice(20, 2020)
let variedAt = 0
const variedSearch = (req: RawRequest): RawRequest => ({
  ...req,
  path: `/conversations/search?q=${encodeURIComponent(VARIED_WORDS[variedAt++ % VARIED_WORDS.length]!)}`,
})

/**
 * The list measured while searches (a different word each) run beside it with as many connections: the
 * list's numbers are the row, the search's go in the note.
 */
function listUnderSearch(run: BenchRun, searches: AreaScenario): AreaScenario {
  const list: AreaScenario = {
    id: 'list-under-search',
    label: 'GET /conversations page 1, searches beside',
    kind: 'read',
    method: 'GET',
    path: '/conversations',
    headers: run.headers.largest,
  }
  return {
    ...list,
    measure: async () => {
      const { connections, warmup, duration } = run.load
      const background = runCannon(run.api.url, searches, connections, warmup + duration + 1)
      const m = await measure(run.api.url, run.api.pid, list, run.load)
      const s = await background
      return { ...m, note: `beside: search, a different word each: ${Math.round(s.requests.average)} req/s, p50 ${s.latency.p50} ms, p99 ${s.latency.p99} ms` }
    },
  }
}

/**
 * Different words read different chunks and messages: on this machine pages untouched for a
 * minute leave the page cache (DAMON reclaim), so a database bigger than memory reads from disk.
 * The search relations are read into the OS cache first (pg_prewarm), so the scenario measures
 * the searches, not the disk, as a database host holding its working set in memory would.
 */
export async function prewarm(sql: Pool): Promise<string> {
  step('prewarming the search relations (pg_prewarm)')
  const t0 = performance.now()
  try {
    // Created only when missing: a standby refuses even CREATE EXTENSION IF NOT EXISTS (bench/replica-cost.ts prewarms one).
    const [{ has }] = await sql<{ has: boolean }[]>`SELECT exists(SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm') AS has`
    if (!has) await sql`CREATE EXTENSION pg_prewarm`
    const relations = sql`
      SELECT c.oid FROM pg_class c
      WHERE c.relname IN ('search_chunks', 'search_chunks_doc_idx', 'search_chunks_recent_idx', 'search_chunks_conversation_id_seq_pk',
                          'messages', 'messages_conversation_idx', 'conversations', 'conversations_pkey', 'guests', 'guests_pkey')
         OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE relname IN ('search_chunks', 'messages'))`
    // Into shared_buffers when they hold the relations with room to spare (a server that has been
    // serving searches for a while has them there), else into the OS cache only ('read').
    const [{ fits }] = await sql<{ fits: boolean }[]>`
      SELECT sum(pg_relation_size(oid)) < 0.8 * pg_size_bytes(current_setting('shared_buffers')) AS fits FROM (${relations}) r`
    const mode = fits ? 'buffer' : 'read'
    const [{ blocks }] = await sql<{ blocks: number }[]>`
      SELECT coalesce(sum(pg_prewarm(r.oid, ${mode})), 0)::int AS blocks FROM (${relations}) r`
    return `prewarmed ${fmtInt(Math.round((blocks * 8) / 1024))} MiB into ${fits ? 'shared_buffers' : 'the OS cache'} in ${((performance.now() - t0) / 1000).toFixed(1)} s`
  } catch (err) {
    return `not prewarmed (${(err as Error).message})`
  }
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now()
  const value = await fn()
  return { value, ms: performance.now() - t0 }
}

/**
 * The rare-word search done two ways, straight in SQL, each the query shape the search endpoint
 * needs (matching conversations of the workspace, not deleted, best first, one page): with the
 * full-text index (tsvector @@ tsquery), and with ILIKE over message bodies (what peers do).
 */
async function searchVsIlike(sql: Pool, workspaceId: string) {
  // The full-text side the way search reads it: candidate chunks (tagged GIN), then the
  // conversations' messages for the rank.
  const fts = () => sql`
    SELECT m.conversation_id, max(ts_rank(m.search, q)) AS rank
    FROM search_chunks ch
    CROSS JOIN websearch_to_tsquery('simple', ${RARE_TOKEN}) q
    JOIN conversations c ON c.id = ch.conversation_id AND c.deleted_at IS NULL
    JOIN messages m ON m.conversation_id = ch.conversation_id AND m.search @@ q
    WHERE ch.workspace_id = ${workspaceId} AND ch.doc @@ search_query(${workspaceId}, ${RARE_TOKEN})
    GROUP BY m.conversation_id
    ORDER BY rank DESC, m.conversation_id DESC
    LIMIT 21`
  const ilike = () => sql`
    SELECT m.conversation_id, max(m.created_at) AS last
    FROM messages m
    JOIN conversations c ON c.id = m.conversation_id AND c.deleted_at IS NULL
    WHERE m.workspace_id = ${workspaceId} AND m.body ILIKE ${'%' + RARE_TOKEN + '%'}
    GROUP BY m.conversation_id
    ORDER BY last DESC
    LIMIT 21`
  step('timing the rare-word search in SQL: full-text index vs ILIKE (once)')
  await fts()
  const f = await timed(fts)
  const i = await timed(ilike)
  const freq = async (w: string) =>
    (
      await sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM messages WHERE workspace_id = ${workspaceId} AND search @@ to_tsquery('simple', ${w})`
    )[0].n
  const [{ total }] = await sql<{ total: number }[]>`SELECT count(*)::int AS total FROM messages WHERE workspace_id = ${workspaceId}`
  return {
    ftsMs: f.ms,
    ilikeMs: i.ms,
    ftsRows: f.value.length,
    ilikeRows: i.value.length,
    messagesInWorkspace: total,
    rareWordMessages: await freq(RARE_TOKEN),
    commonWordMessages: await freq(COMMON_WORD),
    frequentWordMessages: await freq(FREQUENT_WORD),
  }
}

/** EXPLAIN (ANALYZE, BUFFERS) of the first candidate window (the statement search runs) for each word. */
async function explainSearch(sql: Pool, workspaceId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const [name, word] of [['searchRareCandidates', RARE_TOKEN], ['searchCommonCandidates', COMMON_WORD], ['searchFrequentCandidates', FREQUENT_WORD]] as const) {
    const { text, values, plan } = await candidateQuery(sql, workspaceId, word, null)
    const rows = await sql.begin(async (tx) => {
      // As on the search pool's connections (SEARCH_SESSION).
      for (const [name, value] of Object.entries(SEARCH_SESSION)) await tx.unsafe(`SET LOCAL ${name} = '${value}'`)
      return tx.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values, { prepare: false })
    })
    out[name] = `-- ${plan}\n${rows.map((x) => x['QUERY PLAN']).join('\n')}`
  }
  return out
}
