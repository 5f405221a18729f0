/**
 * `GET /analytics/agents`'s reads over the bench's year (the largest workspace), timed in the
 * process, and with --plans EXPLAIN (ANALYZE, BUFFERS) of every statement they run (auto_explain,
 * printed as notices). Usage: node --import tsx bench/agents-explain.ts <db> [runs] [--plans]
 */
import postgres from 'postgres'
import { analyticsRead, metricsOfRange, sumRanges, type Filter } from '../src/analytics/aggregate.js'
import { primaryReads } from '../src/db/replica.js'

const [db, runsArg] = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const plans = process.argv.includes('--plans')
const sql = postgres(`postgres://postgres@127.0.0.1:5432/${db}`, { max: 1, onnotice: (n) => console.log(n.message) })
const DAY = 86_400_000
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const now = Date.now()
const range = { from: `${day(now - 365 * DAY)}T00:00:00.000Z`, to: `${day(now + DAY)}T00:00:00.000Z` }
const [{ ws }] = await sql<{ ws: string }[]>`SELECT workspace_id AS ws FROM conversations GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`
const f: Filter = { workspaceId: ws }
for (let i = 0; i < Number(runsArg ?? 5); i++) {
  await analyticsRead(primaryReads(sql, sql), async (tx) => {
    if (plans && i === 0) {
      await tx`LOAD 'auto_explain'`
      await tx`SELECT set_config('auto_explain.log_min_duration', '0', true), set_config('auto_explain.log_analyze', 'on', true),
                      set_config('auto_explain.log_buffers', 'on', true), set_config('auto_explain.log_level', 'notice', true)`
    }
    const t0 = performance.now()
    const [sums] = await sumRanges(tx, f, 'agent', [range])
    const t1 = performance.now()
    const m = await metricsOfRange(tx, f, 'agent', range, sums)
    const t2 = performance.now()
    console.log(`run ${i}: sumRanges ${(t1 - t0).toFixed(1)} ms, metricsOfRange ${(t2 - t1).toFixed(1)} ms, ${m.size} agents`)
  })
}
await sql.end()
