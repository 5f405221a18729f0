import t from 'tap'
import { EXACT_PERCENTILE_MAX } from '../../src/analytics/aggregate.js'
import { bucketOf, histogramPercentile } from '../../src/analytics/histogram.js'
import { flushRollups, type RolledEvent } from '../../src/analytics/record.js'
import type { Sql } from '../../src/db/client.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { rollupState, steps } from './fixtures.js'

/**
 * The agent dims keep a duration's buckets in one `hist` per rollup row (issue 31,
 * docs/analytics.md "Per-agent histograms"). More samples than EXACT_PERCENTILE_MAX, so the
 * reports answer from the histograms: the medians and p90 of /analytics/agents and of the summary
 * with agentId must be the percentiles of the raw values' buckets, over whole periods (the hist
 * rows) and over a range with partial days at its ends (hist rows plus raw events). The events
 * are inserted by SQL (14,000 through HTTP would take minutes) and added to the rollups by the
 * write path's own statement (flushRollups: one statement whose events share rows but not
 * buckets), some then removed the way a delete removes them.
 */

const N = 7_000
const KINDS = ['first_response', 'conversation_resolved'] as const

t.test('agent histograms: percentiles from the hist rows equal those of the raw events', async (t) => {
  const { app } = await build(t)
  const { sql } = app.deps
  const ws = await seedWorkspace(app)
  const s = steps(app)
  const conv = await s.start(await seedGuest(app, ws))
  const agents = [ws.owner, ws.agent]
  t.ok(N > EXACT_PERCENTILE_MAX, 'enough samples for the histogram path')

  // Deterministic samples from 0.2 s to about 5 days, log-spread, over March to December 2025.
  const start = Date.parse('2025-03-01T00:00:00Z')
  const span = Date.parse('2025-12-31T00:00:00Z') - start
  const events = KINDS.flatMap((kind, ki) =>
    Array.from({ length: N }, (_, i) => {
      const x = ((i * 7919 + ki * 104_729) % 10_007) / 10_007
      return {
        kind,
        seq: i + 1,
        agentId: agents[(i * 31 + ki) % 3 === 0 ? 1 : 0].userId,
        value: Math.round(0.2 * Math.exp(x * 14.6) * 1000) / 1000,
        at: new Date(start + ((i * 104_723) % N) * (span / N)).toISOString(),
      }
    }),
  )
  const insert = (tx: Sql, ev: typeof events) => tx<RolledEvent[]>`
    INSERT INTO metric_events (workspace_id, conversation_id, kind, seq, channel_id, agent_id, team_id, value, occurred_at)
    SELECT ${ws.workspaceId}::uuid, ${conv.id}::uuid, e.kind, e.seq, ${ws.channelId}::uuid, e.agent_id, NULL, e.value, e.at
    FROM unnest(${ev.map((e) => e.kind)}::text[], ${ev.map((e) => e.seq)}::int[], ${ev.map((e) => e.agentId)}::text[],
                ${ev.map((e) => e.value)}::float8[], ${ev.map((e) => e.at)}::text[]::timestamptz[]) AS e(kind, seq, agent_id, value, at)
    RETURNING workspace_id AS "workspaceId", channel_id AS "channelId", agent_id AS "agentId", team_id AS "teamId", kind, value, occurred_at AS "occurredAt"`
  await sql.begin(async (tx) => flushRollups(tx, await insert(tx, events)))
  // Take every 13th sample out again, as forgetConversation does: the hist entries lose them.
  const gone = events.filter((e) => e.seq % 13 === 0)
  await sql.begin(async (tx) => {
    const removed = await tx<RolledEvent[]>`
      DELETE FROM metric_events WHERE conversation_id = ${conv.id} AND kind = ANY(${[...KINDS]}::text[]) AND seq % 13 = 0
      RETURNING workspace_id AS "workspaceId", channel_id AS "channelId", agent_id AS "agentId", team_id AS "teamId", kind, value, occurred_at AS "occurredAt"`
    t.equal(removed.length, gone.length)
    await flushRollups(tx, removed.map((r) => ({ ...r, sign: -1 as const })))
  })
  const kept = events.filter((e) => e.seq % 13 !== 0)

  await t.test('the agent dims hold one hist row per period and kind, no bucket rows', async (t) => {
    const [row] = await sql<{ bucketRows: number; histRows: number }[]>`
      SELECT count(*) FILTER (WHERE bucket >= 0)::int AS "bucketRows", count(*) FILTER (WHERE hist IS NOT NULL)::int AS "histRows"
      FROM metric_rollups WHERE workspace_id = ${ws.workspaceId} AND dim & 2 <> 0 AND kind = ANY(${[...KINDS]}::text[])`
    t.equal(row.bucketRows, 0)
    t.ok(row.histRows > 0)
  })

  const expected = (agentId: string | null, kind: string, from: string, to: string) => {
    const xs = kept.filter((e) => e.kind === kind && (agentId === null || e.agentId === agentId) && e.at >= from && e.at < to).map((e) => e.value)
    const counts = new Map<number, number>()
    for (const v of xs) counts.set(bucketOf(v), (counts.get(bucketOf(v)) ?? 0) + 1)
    return { n: xs.length, avg: xs.reduce((a, b) => a + b, 0) / xs.length, median: histogramPercentile(counts, 0.5), p90: histogramPercentile(counts, 0.9) }
  }
  // Whole months, thirds and days (hist rows only), then one with partial days at both ends
  // (the raw events' buckets added to the hist rows) and one inside a single day (raw only).
  const ranges = [
    ['2025-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    ['2025-02-14T05:30:00.000Z', '2025-12-20T17:45:10.500Z'],
    ['2025-06-10T03:00:00.000Z', '2025-06-10T21:00:00.000Z'],
  ]
  for (const [from, to] of ranges) {
    await t.test(`${from} .. ${to}`, async (t) => {
      const report = await s.get(`/analytics/agents?from=${from}&to=${to}`, ws.owner)
      const scanned = kept.filter((e) => e.at >= from && e.at < to)
      for (const a of agents) {
        const row = report.data.find((r: { userId: string }) => r.userId === a.userId)
        const summary = (await s.get(`/analytics/summary?from=${from}&to=${to}&agentId=${encodeURIComponent(a.userId)}`, ws.owner)).current
        for (const [kind, field] of [['first_response', 'firstResponseTime'], ['conversation_resolved', 'resolutionTime']] as const) {
          const want = expected(a.userId, kind, from, to)
          const big = scanned.filter((e) => e.kind === kind).length > EXACT_PERCENTILE_MAX
          for (const [name, got] of [['agents', row?.metrics], ['summary agentId', summary]] as const) {
            if (want.n === 0) {
              t.equal(got?.[field].median ?? null, null, `${name} ${kind}`)
              continue
            }
            if (big) t.same([got[field].median, got[field].p90], [want.median, want.p90], `${name} ${kind}: percentiles of the buckets`)
            t.ok(Math.abs(got[field].avg - want.avg) < 1e-6 * want.avg, `${name} ${kind}: average`)
          }
          if (want.n > 0 && kind === 'conversation_resolved') t.equal(row.metrics.conversationsResolved, want.n, 'resolved count')
        }
      }
      // The workspace (bucket rows) and the two agents (hist rows) answer from the same buckets.
      const whole = (await s.get(`/analytics/summary?from=${from}&to=${to}`, ws.owner)).current
      const want = expected(null, 'first_response', from, to)
      if (scanned.filter((e) => e.kind === 'first_response').length > EXACT_PERCENTILE_MAX) t.same([whole.firstResponseTime.median, whole.firstResponseTime.p90], [want.median, want.p90])
    })
  }

  await t.test('writers adding to the same hist rows at once lose nothing', async (t) => {
    // Eight transactions at once, each one agent's durations on the same days (so the same hist
    // rows, 4 slots each): every merge runs under ON CONFLICT's row lock on the row as committed.
    const other = await s.start(await seedGuest(app, ws))
    const day = Date.parse('2025-07-01T00:00:00Z')
    const batches = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 40 }, (_, i) => ({ seq: b * 40 + i + 1, value: 1 + ((b * 40 + i) % 37) * 13.7, at: new Date(day + (i % 3) * 86_400_000 + b * 1000).toISOString() })),
    )
    await Promise.all(
      batches.map((batch) =>
        sql.begin(async (tx) => {
          const rows = await tx<RolledEvent[]>`
            INSERT INTO metric_events (workspace_id, conversation_id, kind, seq, channel_id, agent_id, team_id, value, occurred_at)
            SELECT ${ws.workspaceId}::uuid, ${other.id}::uuid, 'first_response', e.seq, ${ws.channelId}::uuid, ${ws.agent.userId}, NULL, e.value, e.at
            FROM unnest(${batch.map((e) => e.seq)}::int[], ${batch.map((e) => e.value)}::float8[], ${batch.map((e) => e.at)}::text[]::timestamptz[]) AS e(seq, value, at)
            RETURNING workspace_id AS "workspaceId", channel_id AS "channelId", agent_id AS "agentId", team_id AS "teamId", kind, value, occurred_at AS "occurredAt"`
          await flushRollups(tx, rows)
        }),
      ),
    )
    const [sum] = await sql<{ n: number }[]>`
      SELECT COALESCE(sum(v::bigint), 0)::int AS n FROM metric_rollups r, json_each_text(r.hist) h(k, v)
      WHERE r.workspace_id = ${ws.workspaceId} AND r.dim = 2 AND r.grain = 'd' AND r.kind = 'first_response'
        AND r.agent_id = ${ws.agent.userId} AND r.period_start >= '2025-07-01' AND r.period_start < '2025-07-04'`
    t.equal(sum.n, 320 + kept.filter((e) => e.kind === 'first_response' && e.agentId === ws.agent.userId && e.at >= '2025-07-01' && e.at < '2025-07-04').length, 'every sample counted once in the day rows')
    const before = await rollupState(sql, ws.workspaceId)
    await sql`SELECT metric_rebuild_rollups()`
    t.same(await rollupState(sql, ws.workspaceId), before, 'equal to a rebuild')
  })

  await t.test('metric_hist_add: stored as json text, zero buckets dropped, an empty or null side kept', async (t) => {
    const [r] = await sql<{ type: string; sum: string; zero: string; empty: string; left: string; right: string }[]>`
      SELECT pg_typeof(metric_hist_add('{"3": 2}'::json, '{"5": 1}'::json))::text AS type,
             metric_hist_add('{"3": 2, "7": 1}'::json, '{"3": 1, "5": 1}'::json)::text AS sum,
             metric_hist_add('{"3": 2, "7": 1}'::json, '{"3": -2}'::json)::text AS zero,
             metric_hist_add('{"3": 2}'::json, '{}'::json)::text AS empty,
             metric_hist_add(NULL, '{"4": 1}'::json)::text AS left,
             metric_hist_add('{"4": 1}'::json, NULL)::text AS right`
    t.same(r, { type: 'json', sum: '{"3": 3, "5": 1, "7": 1}', zero: '{"7": 1}', empty: '{"3": 2}', left: '{"4": 1}', right: '{"4": 1}' })
  })

  await t.test('the rollups the write path kept equal a rebuild, hist entries included', async (t) => {
    const before = await rollupState(sql, ws.workspaceId)
    t.ok(before.some((r) => r.key.includes('|first_response|hist|')), 'hist entries are compared')
    await sql`SELECT metric_rebuild_rollups()`
    t.same(await rollupState(sql, ws.workspaceId), before)
  })
})
