/**
 * Where an unprepared list page goes (docs/scaling.md, PgBouncer): page 1 of GET /conversations
 * in the largest workspace of a kept bench database.
 *   1. EXPLAIN (ANALYZE, SUMMARY) of each statement the page runs (the pinned section, then the
 *      unpinned one, as src/conversations/lists.ts does): median planning and execution time;
 *   2. the page from one connection, named prepared statements vs unnamed ones (what postgres.js
 *      sends behind PgBouncer 1.18), alternated: ms per page;
 *   3. statements per HTTP request: the production build on the database (bench/lib/api.ts),
 *      sequential GET /conversations, counted as committed transactions in pg_stat_database (each
 *      statement outside a transaction is one), less the API's idle background over the same time.
 *
 *   node --import tsx bench/list-plan-cost.ts --db <kept bench database> [--rounds 3 --pages 500 --explains 100]
 */
import { parseArgs } from 'node:util'
import { createSql, type Pool } from '../src/db/client.js'
import { pageSections, resolveList, sectionQuery } from '../src/conversations/lists.js'
import { prepareDatabase, startApi } from './lib/api.js'
import { cleanup } from './lib/cleanup.js'
import { withDatabase } from './lib/db.js'
import { listPageOne } from './list-sql.js'

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    server: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    rounds: { type: 'string', default: '3' },
    pages: { type: 'string', default: '500' },
    explains: { type: 'string', default: '100' },
    'redis-url': { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  },
})
if (!values.db) throw new Error('--db NAME: a database kept by npm run bench -- --keep-db')
const dbUrl = withDatabase(values.server!, values.db)
const rounds = Number(values.rounds)
const pages = Number(values.pages)
const explains = Number(values.explains)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function explainSections(sql: Pool, ws: string) {
  const r = resolveList('open', { workspaceId: ws, userId: 'bench|plan' }, { limit: 20 })
  const [{ n: pinnedRows }] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM conversations WHERE workspace_id = ${ws} AND pinned AND status = 'OPEN' AND deleted_at IS NULL`
  // Page 1's statement as the route runs it (pageSections: one backward scan, pinned rows first).
  const sections = [{ name: 'page 1 (LIMIT 21)', q: () => sectionQuery(sql, r, pageSections(r)[0]!, 21) }]
  console.log(`EXPLAIN (ANALYZE, SUMMARY), ${explains} times each, median (the workspace has ${pinnedRows} pinned open conversations):`)
  for (const s of sections) {
    const plan: number[] = []
    const exec: number[] = []
    for (let i = 0; i < explains; i++) {
      const rows = await sql<{ 'QUERY PLAN': string }[]>`EXPLAIN (ANALYZE, SUMMARY) ${s.q()}`
      const text = rows.map((x) => x['QUERY PLAN']).join('\n')
      plan.push(Number(/Planning Time: ([\d.]+)/.exec(text)![1]))
      exec.push(Number(/Execution Time: ([\d.]+)/.exec(text)![1]))
    }
    console.log(`  ${s.name.padEnd(30)} planning ${median(plan).toFixed(3)} ms, execution ${median(exec).toFixed(3)} ms`)
  }
}

async function pageFromOneConnection(ws: string) {
  console.log(`page 1 (its statements) from one connection, ${pages} pages each, alternated:`)
  for (let round = 1; round <= rounds; round++) {
    const line: string[] = []
    for (const prepare of [true, false]) {
      const sql = createSql(dbUrl, 1, {}, prepare)
      for (let i = 0; i < 50; i++) await listPageOne(sql, ws)
      const t0 = performance.now()
      for (let i = 0; i < pages; i++) await listPageOne(sql, ws)
      line.push(`${prepare ? 'prepared' : 'unprepared'} ${((performance.now() - t0) / pages).toFixed(3)} ms`)
      await sql.end({ timeout: 2 })
    }
    console.log(`  round ${round}: ${line.join(', ')}`)
  }
}

async function statementsPerRequest(sql: Pool) {
  const { meta } = await prepareDatabase({ db: values.db, adminUrl: values.server!, keepDb: true, conversations: 0, seed: 0 }, values.db!, dbUrl)
  const run = await startApi({ redisUrl: values['redis-url']!, cpuProf: false, connections: 1, duration: 1, warmup: 0, env: { JOBS_WORKER: 'false' } }, values.db!, dbUrl, sql, meta, `plan_${process.pid}`)
  const commits = async () => {
    await new Promise((r) => setTimeout(r, 1200)) // backends flush their counters within a second
    const [{ n }] = await sql<{ n: string }[]>`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`
    return { n: Number(n), at: performance.now() }
  }
  const get = async (path: string) => {
    const res = await fetch(run.api.url + path, { headers: run.headers.largest })
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`)
    await res.arrayBuffer()
  }
  await get('/conversations')
  for (const path of ['/conversations', '/conversations?limit=20&status=active']) {
    // The API's background (the sweeper; no job worker) at its rate over an idle stretch, then the requests.
    const i0 = await commits()
    const i1 = await commits()
    const rate = (i1.n - i0.n) / (i1.at - i0.at)
    for (let i = 0; i < 1000; i++) await get(path)
    const c1 = await commits()
    const background = rate * (c1.at - i1.at)
    console.log(`GET ${path}: ${((c1.n - i1.n - background) / 1000).toFixed(2)} statements per request (${c1.n - i1.n} transactions in ${((c1.at - i1.at) / 1000).toFixed(1)} s, background ${(rate * 1000).toFixed(1)}/s)`)
  }
  await run.api.stop()
}

const sql = createSql(dbUrl, 2)
try {
  const [{ ws }] = await sql<{ ws: string }[]>`SELECT workspace_id AS ws FROM conversations GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`
  await statementsPerRequest(sql)
  await explainSections(sql, ws)
  await pageFromOneConnection(ws)
} finally {
  await cleanup()
  await sql.end({ timeout: 2 })
}
