import type { MetricsView } from '../../schemas/analytics.js'
import type { Sql } from '../db/client.js'
import type { Reads } from '../db/replica.js'
import { metricKinds, type MetricKind } from '../db/vocabulary.js'
import { addHistogramText, BUCKETS, histogramPercentile } from './histogram.js'
import { decompose } from './pieces.js'

/**
 * Sums of metric events over time ranges, from the rollups (whole UTC months, days, hours) plus
 * the raw events of the partial hours at the ends (docs/analytics.md). Exact for counts, sums
 * and averages in any time zone; percentiles are exact (percentile_cont over the events) when the
 * range holds at most EXACT_PERCENTILE_MAX samples, else from the merged histograms.
 */

/**
 * Runs a report's reads in one read-only snapshot (current and previous period, sums and exact
 * percentiles agree with each other) with JIT and sorts off. The planner cannot know how many
 * rows a range piece holds: it overestimates the raw scans, and JIT compilation then cost ~400 ms
 * on a query that runs in 5 (measured on the 1M benchmark: the year-ending-now summary went from
 * p50 198 ms); and it underestimates the rollup pieces (7 rows a piece where /analytics/agents
 * reads 1,170), so it sorted the 28,000 rows of a year's agent pieces to group them, 100-250 ms
 * where hashing them takes 15-25 (docs/analytics.md, "Known costs"). No analytics read needs a
 * sort but percentile_cont's own, which this does not affect.
 */
export async function analyticsRead<T>(reads: Reads, fn: (sql: Sql) => Promise<T>): Promise<T> {
  // On the read replica while it is online (src/db/replica.ts), else the primary.
  return reads.run('main', async (pool) => {
    let out!: T
    await pool.begin('isolation level repeatable read read only', async (tx) => {
      await tx`SELECT set_config('jit', 'off', true), set_config('enable_sort', 'off', true)`
      out = await fn(tx)
    })
    return out
  })
}

/** Chosen by measurement (docs/analytics.md): percentile_cont over this many index-only rows stays a few ms. */
export const EXACT_PERCENTILE_MAX = 5_000

export interface Filter {
  workspaceId: string
  channelId?: string
  agentId?: string
  /** What is attributed to conversations of this team at the moment of each event (the rollups' team dims). */
  teamId?: string
}

/** Per key (agent, channel or '' for the whole): kind -> count, sum and bucket counts. */
export interface Sums {
  n: Map<MetricKind, number>
  total: Map<MetricKind, number>
  hist: Map<MetricKind, Map<number, number>>
}

export type GroupBy = 'none' | 'agent' | 'channel'

const newSums = (): Sums => ({ n: new Map(), total: new Map(), hist: new Map() })

function dimOf(f: Filter, group: GroupBy): number {
  const channel = f.channelId !== undefined || group === 'channel'
  const agent = f.agentId !== undefined || group === 'agent'
  return (channel ? 1 : 0) + (agent ? 2 : 0) + (f.teamId !== undefined ? 4 : 0)
}

/** Hour rollups exist for the dims without the agent bit (metric_kept()). */
const hasHours = (dim: number) => (dim & 2) === 0

function keyExpr(sql: Sql, group: GroupBy, table: 'r' | 'e') {
  if (group === 'agent') return sql.unsafe(`${table}.agent_id`)
  if (group === 'channel') return sql.unsafe(`${table}.channel_id::text`)
  return sql.unsafe(`''`)
}

function filters(sql: Sql, f: Filter, group: GroupBy, table: 'r' | 'e') {
  const t = sql.unsafe(table)
  return sql`
    ${f.channelId !== undefined ? sql`AND ${t}.channel_id = ${f.channelId}::uuid` : sql``}
    ${f.agentId !== undefined ? sql`AND ${t}.agent_id = ${f.agentId}` : sql``}
    ${f.teamId !== undefined ? sql`AND ${t}.team_id = ${f.teamId}::uuid` : sql``}
    ${table === 'e' && group === 'agent' ? sql`AND e.agent_id IS NOT NULL` : sql``}`
}

/**
 * The sums of one range, key and kind; for a duration kind `hist` maps bucket -> samples of the
 * rows kept per bucket and of the raw ends, and `hists` is the text of the histograms of the rows
 * that keep theirs in one object (the agent dims' `hist` column), concatenated. Their sum is the
 * histogram.
 */
interface Row {
  b: number
  kind: MetricKind
  key: string
  n: number
  total: number
  hist: Record<string, number> | null
  hists: string | null
}

/** The bucket counts of a row: `hist` plus every object of `hists`, summed (zero buckets left out). */
function histOf(row: Row): Map<number, number> {
  const acc = new Float64Array(BUCKETS)
  if (row.hist) for (const k in row.hist) acc[Number(k)] += row.hist[k]
  if (row.hists) addHistogramText(acc, row.hists)
  const out = new Map<number, number>()
  for (let k = 0; k < BUCKETS; k++) if (acc[k] !== 0) out.set(k, acc[k])
  return out
}

/**
 * For each range of `ranges` (ISO instants, ms precision), the sums per key: one statement for
 * the rollup pieces and the raw ends of all ranges (plus, with a filter, the workspace's sample
 * count).
 */
export interface RangeSums {
  byKey: Map<string, Sums>
  /** Samples of each duration kind in the workspace's index range (what an exact percentile scans). */
  scanned: Map<MetricKind, number>
}

export async function sumRanges(sql: Sql, f: Filter, group: GroupBy, ranges: { from: string; to: string }[]): Promise<RangeSums[]> {
  const grains: string[] = []
  const starts: string[] = []
  const rb: number[] = []
  const los: string[] = []
  const his: string[] = []
  const eb: number[] = []
  ranges.forEach((r, b) => {
    for (const p of decompose(Date.parse(r.from), Date.parse(r.to), hasHours(dimOf(f, group)))) {
      if (p.raw) {
        los.push(p.lo)
        his.push(p.hi)
        eb.push(b)
      } else {
        grains.push(p.grain)
        starts.push(p.start)
        rb.push(b)
      }
    }
  })
  const dim = dimOf(f, group)
  // One statement for the rollup pieces and the raw ends of every range, summed by PostgreSQL
  // (hash aggregation: analyticsRead), one row per range, key and kind with its histogram as a
  // JSON object: a year of /analytics/agents is 160 rows, not the 6,653 of one per bucket, whose
  // decoding cost as much as the statement (docs/analytics.md, "Known costs"). The agent dims
  // keep a duration's buckets in one `hist` per row (json): their text is passed through,
  // concatenated, and summed here without parsing it into objects (a year of 40 agents: ~2,300 of
  // them, where the bucket rows were 22,000-55,000).
  const [rows, whole] = await Promise.all([
    sql<Row[]>`
      SELECT y.b, y.kind, y.key, sum(y.n)::float8 AS n, sum(y.total)::float8 AS total,
             json_object_agg(y.bucket, y.n) FILTER (WHERE y.bucket >= 0) AS hist,
             string_agg(y.hists, '') AS hists
      FROM (
        SELECT x.b, x.kind, x.bucket, x.key, sum(x.n)::float8 AS n, sum(x.total)::float8 AS total,
               string_agg(x.hist::text, '') AS hists
        FROM (
          SELECT p.b, r.kind, r.bucket, ${keyExpr(sql, group, 'r')} AS key, r.n, r.total, r.hist
          FROM unnest(${grains}::text[], ${starts}::text[]::timestamptz[], ${rb}::int[]) AS p(grain, start, b)
          JOIN metric_rollups r ON r.workspace_id = ${f.workspaceId}::uuid AND r.dim = ${dim}
            AND r.grain = p.grain AND r.period_start = p.start ${filters(sql, f, group, 'r')}
          UNION ALL
          SELECT p.b, e.kind, CASE WHEN metric_has_histogram(e.kind) THEN metric_bucket(e.value) ELSE -1 END,
                 ${keyExpr(sql, group, 'e')}, 1::bigint, COALESCE(e.value, 0), NULL::json
          FROM unnest(${los}::text[]::timestamptz[], ${his}::text[]::timestamptz[], ${eb}::int[]) AS p(lo, hi, b)
          JOIN metric_events e ON e.workspace_id = ${f.workspaceId}::uuid AND e.kind = ANY(${[...metricKinds]}::text[])
            AND e.occurred_at >= p.lo AND e.occurred_at < p.hi ${filters(sql, f, group, 'e')}
        ) x
        GROUP BY 1, 2, 3, 4
      ) y
      GROUP BY 1, 2, 3`,
    // A filtered exact percentile still scans the workspace's samples: count them (the raw ends,
    // under two hours, are left out of this estimate).
    dim === 0 || grains.length === 0
      ? []
      : sql<{ b: number; kind: MetricKind; n: number }[]>`
          SELECT p.b, r.kind, sum(r.n)::float8 AS n
          FROM unnest(${grains}::text[], ${starts}::text[]::timestamptz[], ${rb}::int[]) AS p(grain, start, b)
          JOIN metric_rollups r ON r.workspace_id = ${f.workspaceId}::uuid AND r.dim = 0
            AND r.grain = p.grain AND r.period_start = p.start AND metric_has_histogram(r.kind)
          GROUP BY 1, 2`,
  ])
  const out: RangeSums[] = ranges.map(() => ({ byKey: new Map<string, Sums>(), scanned: new Map() }))
  for (const row of rows) {
    const { byKey, scanned } = out[row.b]
    if (dim === 0 && row.hist) scanned.set(row.kind, (scanned.get(row.kind) ?? 0) + row.n)
    let s = byKey.get(row.key)
    if (!s) byKey.set(row.key, (s = newSums()))
    s.n.set(row.kind, row.n)
    s.total.set(row.kind, row.total)
    if (row.hist || row.hists) s.hist.set(row.kind, histOf(row))
  }
  for (const row of whole) out[row.b].scanned.set(row.kind, (out[row.b].scanned.get(row.kind) ?? 0) + row.n)
  // Deleted conversations leave zero rows behind (n = 0): they are not keys with work.
  for (const { byKey } of out) {
    for (const [key, s] of byKey) if ([...s.n.values()].every((v) => v === 0)) byKey.delete(key)
  }
  return out
}

export interface Percentiles {
  median: number | null
  p90: number | null
}

/** Exact percentiles (percentile_cont) per key of one duration kind over one range. */
export async function exactPercentiles(
  sql: Sql,
  f: Filter,
  group: GroupBy,
  kind: MetricKind,
  r: { from: string; to: string },
): Promise<Map<string, Percentiles>> {
  const rows = await sql<{ key: string; median: number | null; p90: number | null }[]>`
    SELECT ${keyExpr(sql, group, 'e')} AS key,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY e.value) AS median,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY e.value) AS p90
    FROM metric_events e
    WHERE e.workspace_id = ${f.workspaceId}::uuid AND e.kind = ${kind}
      AND e.occurred_at >= ${r.from}::timestamptz AND e.occurred_at < ${r.to}::timestamptz ${filters(sql, f, group, 'e')}
    GROUP BY 1`
  return new Map(rows.map((x) => [x.key, { median: x.median, p90: x.p90 }]))
}

const DURATIONS = ['first_response', 'conversation_resolved'] as const

/**
 * The metrics of every key of one range: counts and averages from the sums; percentiles exact
 * when the samples of the whole scan are few, else from the histograms.
 */
export async function metricsOfRange(sql: Sql, f: Filter, group: GroupBy, r: { from: string; to: string }, sums: RangeSums): Promise<Map<string, MetricsView>> {
  const exact = new Map<MetricKind, Map<string, Percentiles>>()
  for (const kind of DURATIONS) {
    const samples = [...sums.byKey.values()].reduce((a, s) => a + (s.n.get(kind) ?? 0), 0)
    if (samples > 0 && (sums.scanned.get(kind) ?? 0) <= EXACT_PERCENTILE_MAX) exact.set(kind, await exactPercentiles(sql, f, group, kind, r))
  }
  const out = new Map<string, MetricsView>()
  for (const [key, s] of sums.byKey) out.set(key, metricsOf(s, (kind) => exact.get(kind)?.get(key)))
  return out
}

const count = (s: Sums, k: MetricKind) => Math.round(s.n.get(k) ?? 0)

function timeStats(s: Sums, kind: MetricKind, exact: Percentiles | undefined) {
  const n = s.n.get(kind) ?? 0
  if (n <= 0) return { avg: null, median: null, p90: null }
  const hist = s.hist.get(kind) ?? new Map()
  return {
    avg: (s.total.get(kind) ?? 0) / n,
    median: exact ? exact.median : histogramPercentile(hist, 0.5),
    p90: exact ? exact.p90 : histogramPercentile(hist, 0.9),
  }
}

const slaStats = (met: number, breached: number) => ({ met, breached, hitRate: met + breached > 0 ? met / (met + breached) : null })

export function metricsOf(s: Sums, exact: (kind: MetricKind) => Percentiles | undefined = () => undefined): MetricsView {
  const ratings = count(s, 'csat')
  return {
    conversationsCreated: count(s, 'conversation_created'),
    conversationsResolved: count(s, 'conversation_resolved'),
    messagesReceived: count(s, 'message_received'),
    messagesSent: count(s, 'message_sent'),
    firstResponseTime: timeStats(s, 'first_response', exact('first_response')),
    resolutionTime: timeStats(s, 'conversation_resolved', exact('conversation_resolved')),
    csat: {
      responses: ratings,
      average: ratings > 0 ? (s.total.get('csat') ?? 0) / ratings : null,
      satisfiedShare: ratings > 0 ? count(s, 'csat_satisfied') / ratings : null,
    },
    sla: {
      firstResponse: slaStats(count(s, 'sla_first_response_met'), count(s, 'sla_first_response_breached')),
      nextResponse: slaStats(count(s, 'sla_next_response_met'), count(s, 'sla_next_response_breached')),
      resolution: slaStats(count(s, 'sla_resolution_met'), count(s, 'sla_resolution_breached')),
    },
  }
}

export const emptySums = newSums
