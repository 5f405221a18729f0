/**
 * EXPLAIN (ANALYZE, BUFFERS) of the exact statements GET /conversations/search runs (captured
 * from searchConversations: the first candidate window and its ranking, the ranking also in the
 * generic plan the app's prepared statement runs), on a database kept by `npm run bench -- --keep-db`, plus the
 * whole search's latency from one client (median of N runs) and the CPU time the PostgreSQL
 * backend spent per search (utime + stime from /proc, so other load on the machine does not
 * count; needs the database on this host).
 *
 *   node --import tsx bench/search-plan.ts <parley_bench_db> <word> [small] [runs=20]
 *   node --import tsx bench/search-plan.ts <parley_bench_db> varied [small] [words=300]
 *   node --import tsx bench/search-plan.ts <parley_bench_db> plans [small] [words=2000]
 *   node --import tsx bench/search-plan.ts <parley_bench_db> statements:<word> [small] [runs=200]
 *   node --import tsx bench/search-plan.ts <parley_bench_db> varied-pass [small] [words=2000]
 *   node --import tsx bench/search-plan.ts <parley_bench_db> breakdown [small] [words=2000]
 *
 * `breakdown` needs pg_stat_statements (shared_preload_libraries, pg_stat_statements.track_planning
 * = on, CREATE EXTENSION in the bench database): the varied words once untimed, then once more with
 * the statistics reset, and each statement's planning and execution time per search.
 * `small` searches the small (10,000-conversation) workspace instead of the largest.
 */
import postgres from 'postgres'
import { loadConfig } from '../src/config.js'
import { useTextTypes } from '../src/db/client.js'
import { candidateQuery, readCandidates, SEARCH_SESSION, searchConversations } from '../src/search/search.js'
import { benchOwner, scriptContext } from './lib/context.js'
import { buildVocabulary } from './lib/words.js'

const [db, word, which, runsArg] = process.argv.slice(2)
if (!db || !word) throw new Error('usage: search-plan.ts <db> <word> [small|largest] [runs]')
const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const url = new URL(base)
url.pathname = `/${db}`
// The first candidate window and the first window's ranking statement of a search.
const captured: Record<string, { text: string; params: unknown[] }> = {}
const sql = postgres(url.toString(), {
  max: 1,
  onnotice: () => {},
  // The search pool's own settings (no parallel plans), as in the app.
  connection: { ...SEARCH_SESSION, TimeZone: 'UTC' },
  debug: (_c, text, params) => {
    const kind = /FROM search_chunks ch/.test(text) ? 'candidates' : /WITH ranked/.test(text) ? 'rank' : null
    if (kind && !captured[kind]) captured[kind] = { text, params: params as unknown[] }
  },
})
// As in the app: timestamps come back as text.
useTextTypes(sql)
const [meta] = await sql<{ data: { seed: Record<string, { id: string }> } }[]>`SELECT data FROM bench_meta`
const workspaceId = meta!.data.seed[which === 'small' ? 'small' : 'largest']!.id
const config = loadConfig({ ...process.env, DATABASE_URL: url.toString(), CURSOR_SECRET: 'x'.repeat(32), AUTH_JWT_SECRET: 'x'.repeat(32), VISITOR_SESSION_SECRET: 'x'.repeat(32) } as never)
const ctx = scriptContext(sql, config, benchOwner(workspaceId))
const [{ pid }] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`
const { readFileSync } = await import('node:fs')
const ticks = (): number => {
  // Fields 14 and 15 of /proc/<pid>/stat (after the parenthesised command): utime, stime.
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return Number(f[11]) + Number(f[12])
}
const runs = Number(runsArg ?? 20)
if (word.startsWith('statements:')) {
  // Each statement of one search for the word (first page), replayed `runs` times alone: backend
  // CPU per execution (planning included for the unprepared ones, as in the app).
  const q = word.slice('statements:'.length)
  await searchConversations(ctx, { q, limit: 20 })
  const seen: { text: string; params: unknown[] }[] = []
  const all = postgres(url.toString(), { max: 1, onnotice: () => {}, connection: { ...SEARCH_SESSION, TimeZone: 'UTC' }, debug: (_c, text, params) => void seen.push({ text, params: params as unknown[] }) })
  useTextTypes(all)
  await searchConversations(scriptContext(all, config, benchOwner(workspaceId)), { q, limit: 20 })
  await all.end()
  for (const st of seen.filter((x) => !/pg_stats|pg_class|pg_catalog/.test(x.text))) {
    const prepare = /WITH ranked|WITH gh|b\.last_message_at/.test(st.text)
    await sql.unsafe(st.text, st.params as never[], { prepare })
    const c0 = ticks()
    for (let i = 0; i < runs; i++) await sql.unsafe(st.text, st.params as never[], { prepare })
    console.log(`${(((ticks() - c0) * 10) / runs).toFixed(2)} ms${prepare ? ' (prepared)' : ''}  ${st.text.replace(/\s+/g, ' ').trim().slice(0, 80)}`)
  }
  await sql.end()
  process.exit(0)
}
if (word === 'plans') {
  // The candidate step alone (first window) of the search-varied words, each by every plan
  // (forced, with the word's true share of the workspace's chunks), by the word's matching chunks
  // in the workspace: backend CPU per window (each plan 5 times per word, after one untimed run),
  // and which plan search itself chooses from the statistics. Checks that the plans agree.
  const words = buildVocabulary().words.slice(20, 20 + Number(runsArg ?? 2000))
  const [{ chunks }] = await sql<{ chunks: number }[]>`SELECT count(*)::int AS chunks FROM search_chunks WHERE workspace_id = ${workspaceId}`
  const bands = [0, 200, 400, 800, 1200, 1600, 2500, 5000, 7500, 10000, 15000, 20000, 30000, 50000, Infinity]
  const plans = ['list', 'period', 'walk'] as const
  const acc = new Map<number, { words: number; cpu: Record<string, number>; chosen: Record<string, number> }>()
  for (const w of words) {
    const [{ n }] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM search_chunks WHERE workspace_id = ${workspaceId} AND doc @@ search_query(${workspaceId}, ${w})`
    if (n === 0) continue
    const band = bands.findIndex((b, i) => n >= b && n < bands[i + 1]!)
    const a = acc.get(band) ?? { words: 0, cpu: {}, chosen: {} }
    a.words++
    const { plan: chosen } = await candidateQuery(sql, workspaceId, w, null)
    a.chosen[chosen] = (a.chosen[chosen] ?? 0) + 1
    let reference: string | null = null
    for (const plan of plans) {
      const window = () => readCandidates(sql, sql, workspaceId, w, null, { plan })
      const same = JSON.stringify(await window())
      if (reference === null) reference = same
      else if (same !== reference) console.log(`!! ${w}: ${plan} differs from list`)
      const c0 = ticks()
      for (let i = 0; i < 5; i++) await window()
      a.cpu[plan] = (a.cpu[plan] ?? 0) + ((ticks() - c0) * 10) / 5
    }
    acc.set(band, a)
  }
  console.log(`matching chunks (of ${chunks} in the workspace) | words | ${plans.join(' | ')} (backend CPU ms per window) | chosen`)
  for (const [band, a] of [...acc].sort((x, y) => x[0] - y[0])) {
    const cells = plans.map((p) => (a.cpu[p]! / a.words).toFixed(2))
    console.log(`${bands[band]}-${bands[band + 1]} | ${a.words} | ${cells.join(' | ')} | ${Object.entries(a.chosen).map(([p, k]) => `${p} ${k}`).join(', ')}`)
  }
  await sql.end()
  process.exit(0)
}
if (word === 'varied-pass') {
  // The varied words in two passes, each word once per pass, the second pass timed: a word's pages
  // were last read ~2,000 searches earlier, so what shared_buffers holds decides whether they are
  // still there (issue 31: PostgreSQL settings). BENCH_DATABASE_URL may name another server.
  const words = buildVocabulary().words.slice(20, 20 + runs)
  for (const w of words) await searchConversations(ctx, { q: w, limit: 20 })
  const c0 = ticks()
  const t0 = performance.now()
  for (const w of words) await searchConversations(ctx, { q: w, limit: 20 })
  const [{ sb }] = await sql<{ sb: string }[]>`SELECT current_setting('shared_buffers') AS sb`
  console.log(`shared_buffers ${sb}: ${words.length} words, whole search mean ${((performance.now() - t0) / words.length).toFixed(2)} ms; PostgreSQL backend CPU ${(((ticks() - c0) * 10) / words.length).toFixed(2)} ms per search`)
  await sql.end()
  process.exit(0)
}
if (word === 'breakdown') {
  const words = buildVocabulary().words.slice(20, 20 + runs)
  for (const w of words) await searchConversations(ctx, { q: w, limit: 20 })
  await sql`SELECT pg_stat_statements_reset()`
  const t0 = performance.now()
  for (const w of words) await searchConversations(ctx, { q: w, limit: 20 })
  const wall = (performance.now() - t0) / words.length
  const rows = await sql<{ calls: number; plan: number; exec: number; hits: number; query: string }[]>`
    SELECT calls::int, total_plan_time AS plan, total_exec_time AS exec, shared_blks_hit::float8 AS hits, query
    FROM pg_stat_statements
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'
    ORDER BY total_plan_time + total_exec_time DESC LIMIT 10`
  console.log(`${words.length} words, whole search ${wall.toFixed(2)} ms each (one client, warm); per search:`)
  for (const r of rows)
    console.log(`${(r.plan / words.length).toFixed(3)} ms planning  ${(r.exec / words.length).toFixed(3)} ms executing  ${r.calls} calls  ${Math.round(r.hits / Math.max(1, r.calls))} buffers/call  ${r.query.replace(/\s+/g, ' ').slice(0, 90)}`)
  await sql.end()
  process.exit(0)
}
if (word === 'varied') {
  // The search-varied scenario's words one after the other, each searched once (twice: the
  // second is timed, so the disk is left out), grouped by the plan search chose.
  const words = buildVocabulary().words.slice(20, 20 + runs)
  const by = new Map<string, { wall: number[]; cpu: number }>()
  for (const w of words) {
    await searchConversations(ctx, { q: w, limit: 20 })
    const { plan } = await candidateQuery(sql, workspaceId, w, null)
    const c0 = ticks()
    const t0 = performance.now()
    await searchConversations(ctx, { q: w, limit: 20 })
    const g = by.get(plan) ?? { wall: [], cpu: 0 }
    g.wall.push(performance.now() - t0)
    g.cpu += (ticks() - c0) * 10
    by.set(plan, g)
  }
  for (const [plan, g] of by) {
    g.wall.sort((a, b) => a - b)
    const pct = (p: number) => g.wall[Math.min(g.wall.length - 1, Math.floor(g.wall.length * p))]!.toFixed(1)
    console.log(`${plan}: ${g.wall.length} words, whole search p50 ${pct(0.5)} / p90 ${pct(0.9)} / max ${pct(1)} ms; PostgreSQL backend CPU ${(g.cpu / g.wall.length).toFixed(2)} ms per search`)
  }
  await sql.end()
  process.exit(0)
}
await searchConversations(ctx, { q: word, limit: 20 })
const times: number[] = []
const cpu0 = ticks()
for (let i = 0; i < runs; i++) {
  const t0 = performance.now()
  await searchConversations(ctx, { q: word, limit: 20 })
  times.push(performance.now() - t0)
}
const cpuMs = ((ticks() - cpu0) * 10) / runs // USER_HZ = 100
times.sort((a, b) => a - b)
const { plan: chosen } = await candidateQuery(sql, workspaceId, word, null)
for (const [kind, c] of Object.entries(captured)) {
  const plan = await sql.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${c.text}`, c.params as never[], { prepare: false })
  console.log(`-- ${kind}${kind === 'candidates' ? ` (${chosen})` : ''}\n${plan.map((r) => r['QUERY PLAN']).join('\n')}\n`)
}
// The app prepares the ranking statement, and PostgreSQL keeps its generic plan after five runs;
// EXPLAIN with bound values always plans them in (above). The generic plan, as the app runs it:
// what a value the plan cannot see costs per row (docs/search.md, "The search text's tsquery").
if (captured.rank) {
  const { text, params } = captured.rank
  const generic = await sql.begin(async (tx) => {
    await tx`SET LOCAL plan_cache_mode = force_generic_plan`
    // The simple protocol: under the extended one the server would read $1... as this statement's own parameters.
    await tx.unsafe(`PREPARE rank_generic AS ${text}`).simple()
    const [{ types }] = await tx<{ types: string[] }[]>`SELECT parameter_types::text[] AS types FROM pg_prepared_statements WHERE name = 'rank_generic'`
    // As literals: a utility statement's parameters get no types from the server.
    const args = params.map((v, i) => `'${String(v).replace(/'/g, "''")}'::${types[i]}`).join(', ')
    const plan = await tx.unsafe(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE rank_generic(${args})`).simple()
    await tx.unsafe('DEALLOCATE rank_generic')
    return plan
  })
  console.log(`-- rank (generic plan, as prepared)\n${generic.map((r) => r['QUERY PLAN']).join('\n')}\n`)
}
console.log(`\n${word} in ${which === 'small' ? 'small' : 'largest'} workspace: whole search from one client, ${times.length} runs: p50 ${times[times.length >> 1]!.toFixed(2)} ms, min ${times[0]!.toFixed(2)} ms; PostgreSQL backend CPU ${cpuMs.toFixed(2)} ms per search`)
await sql.end()
