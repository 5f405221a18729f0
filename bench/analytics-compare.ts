/**
 * The analytics reads of two databases compared (issue 31: a database before and after a rollup
 * change): summary, agents and channels, and agentId filters, for the 3 largest workspaces over
 * 4 ranges; averages to 10 significant digits (their float sum order may differ). Both databases
 * need the current columns (add `hist` to an older one: ALTER TABLE metric_rollups ADD COLUMN
 * hist json). Usage: node --import tsx bench/analytics-compare.ts <db before> <db after>
 */
import postgres from 'postgres'
import { analyticsRead, metricsOfRange, sumRanges, type Filter, type GroupBy } from '../src/analytics/aggregate.js'
import { primaryReads } from '../src/db/replica.js'
const [a, b] = process.argv.slice(2)
const A = postgres(`postgres://postgres@127.0.0.1:5432/${a}`, { max: 2 })
const B = postgres(`postgres://postgres@127.0.0.1:5432/${b}`, { max: 2 })
const DAY = 86_400_000
const now = Date.now()
const iso = (ms: number) => new Date(ms).toISOString()
const day = (ms: number) => iso(ms).slice(0, 10)
const ranges = [
  { from: `${day(now - 365 * DAY)}T00:00:00.000Z`, to: `${day(now + DAY)}T00:00:00.000Z` },
  { from: iso(now - 365 * DAY), to: iso(now) },
  { from: iso(now - 3 * DAY - 12345), to: iso(now - 4567) },
  { from: `${day(now - 60 * DAY)}T05:30:00.000Z`, to: `${day(now - 22 * DAY)}T05:30:00.000Z` },
]
const wss = await A<{ ws: string }[]>`SELECT workspace_id AS ws FROM conversations GROUP BY 1 ORDER BY count(*) DESC LIMIT 3`
let diffs = 0, checked = 0, hist = 0
const run = async (sql: postgres.Sql, f: Filter, g: GroupBy, r: { from: string; to: string }) =>
  analyticsRead(primaryReads(sql as never, sql as never), async (tx) => { const [s] = await sumRanges(tx, f, g, [r]); return metricsOfRange(tx, f, g, r, s) })
const round = (m: unknown) => JSON.parse(JSON.stringify(m, (k, v) => (k === 'avg' || k === 'average') && typeof v === 'number' ? Number(v.toPrecision(10)) : v))
for (const { ws } of wss) {
  const agents = await A<{ a: string }[]>`SELECT DISTINCT agent_id AS a FROM metric_events WHERE workspace_id = ${ws} AND agent_id IS NOT NULL LIMIT 3`
  const filters: [Filter, GroupBy][] = [[{ workspaceId: ws }, 'none'], [{ workspaceId: ws }, 'agent'], [{ workspaceId: ws }, 'channel'],
    ...agents.map((x): [Filter, GroupBy] => [{ workspaceId: ws, agentId: x.a }, 'none']), ...agents.map((x): [Filter, GroupBy] => [{ workspaceId: ws, agentId: x.a }, 'channel'])]
  for (const r of ranges) for (const [f, g] of filters) {
    const [x, y] = await Promise.all([run(A, f, g, r), run(B, f, g, r)])
    const sx = JSON.stringify(round([...x.entries()].sort())), sy = JSON.stringify(round([...y.entries()].sort()))
    checked++
    if (sx !== sy) { diffs++; console.log('DIFF', ws, g, f.agentId, r, "\n", sx, "\n", sy) }
    if (sx.includes('median')) hist++
  }
}
console.log(`${checked} compared, ${diffs} differ`)
await A.end(); await B.end()
