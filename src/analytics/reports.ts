import type {
  AgentsReportView,
  ChannelsReportView,
  LiveView,
  SummaryView,
  TimeseriesMetric,
  TimeseriesView,
} from '../../schemas/analytics.js'
import { memberOf, type Ctx } from '../context.js'
import { analyticsRead, emptySums, metricsOf, metricsOfRange, sumRanges, type Filter, type Sums } from './aggregate.js'
import { previousOf, resolveRange, type RangeQuery } from './range.js'

/** The analytics reports (API.md section 15, docs/analytics.md). Permission: analytics:read. */

function filterOf(ctx: Ctx, q: { channelId?: string; agentId?: string; teamId?: string }): Filter {
  return { workspaceId: memberOf(ctx).workspaceId, channelId: q.channelId, agentId: q.agentId, teamId: q.teamId }
}

/** GET /analytics/summary: the range and the period of the same length just before it. */
export async function summary(ctx: Ctx, q: RangeQuery): Promise<SummaryView> {
  const range = await resolveRange(ctx.sql, q)
  const prev = previousOf(range)
  const f = filterOf(ctx, q)
  const [current, previous] = await analyticsRead(ctx.reads, async (sql) => {
    const [cur, before] = await sumRanges(sql, f, 'none', [range, prev])
    return Promise.all([metricsOfRange(sql, f, 'none', range, cur), metricsOfRange(sql, f, 'none', prev, before)])
  })
  return {
    from: range.from,
    to: range.to,
    current: current.get('') ?? metricsOf(emptySums()),
    previous: previous.get('') ?? metricsOf(emptySums()),
  }
}

/** GET /analytics/agents: every member with anything attributed to them in the range. */
export async function agentsReport(ctx: Ctx, q: RangeQuery): Promise<AgentsReportView> {
  const range = await resolveRange(ctx.sql, q)
  const f = filterOf(ctx, q)
  const metrics = await analyticsRead(ctx.reads, async (sql) => {
    const [sums] = await sumRanges(sql, f, 'agent', [range])
    return metricsOfRange(sql, f, 'agent', range, sums)
  })
  const ids = [...metrics.keys()]
  if (ids.length === 0) return { data: [] }
  // Members of the workspace only: an id that is not one (a removed member) has no name to show.
  const members = await ctx.sql<{ userId: string; name: string }[]>`
    SELECT user_id AS "userId", name FROM members WHERE workspace_id = ${f.workspaceId} AND user_id = ANY(${ids}::text[])
    ORDER BY name, user_id`
  return { data: members.map((m) => ({ userId: m.userId, name: m.name, metrics: metrics.get(m.userId)! })) }
}

/** GET /analytics/channels: every channel of the workspace with anything in the range. */
export async function channelsReport(ctx: Ctx, q: RangeQuery): Promise<ChannelsReportView> {
  const range = await resolveRange(ctx.sql, q)
  const f = filterOf(ctx, q)
  const metrics = await analyticsRead(ctx.reads, async (sql) => {
    const [sums] = await sumRanges(sql, f, 'channel', [range])
    return metricsOfRange(sql, f, 'channel', range, sums)
  })
  const ids = [...metrics.keys()]
  if (ids.length === 0) return { data: [] }
  const channels = await ctx.sql<{ channelId: string; name: string }[]>`
    SELECT id AS "channelId", name FROM channels WHERE workspace_id = ${f.workspaceId} AND id = ANY(${ids}::uuid[])
    ORDER BY created_at, id`
  return { data: channels.map((c) => ({ channelId: c.channelId, name: c.name, metrics: metrics.get(c.channelId)! })) }
}

const UNIT = { hour: '1 hour', day: '1 day', week: '1 week' } as const

/**
 * GET /analytics/timeseries: calendar buckets in the zone, computed by PostgreSQL. Days and weeks
 * step in local time (a DST day is 23 or 25 hours long); hours step in absolute time, so the hour
 * repeated when clocks go back is two buckets and the skipped one none. The first bucket holds
 * `from`; each bucket sums the samples inside both it and the range.
 */
export async function timeseries(
  ctx: Ctx,
  q: RangeQuery & { metric: TimeseriesMetric; groupBy: 'hour' | 'day' | 'week' },
): Promise<TimeseriesView> {
  const range = await resolveRange(ctx.sql, q)
  const f = filterOf(ctx, q)
  const tz = range.timezone
  const step = UNIT[q.groupBy]
  const fmt = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'
  const buckets =
    q.groupBy === 'hour'
      ? await ctx.sql<{ start: string; end: string }[]>`
          SELECT to_char(b AT TIME ZONE 'UTC', ${fmt}) AS start, to_char((b + interval '1 hour') AT TIME ZONE 'UTC', ${fmt}) AS end
          FROM generate_series(date_trunc('hour', ${range.from}::timestamptz AT TIME ZONE ${tz}) AT TIME ZONE ${tz},
                               ${range.to}::timestamptz - interval '1 millisecond', interval '1 hour') AS b`
      : await ctx.sql<{ start: string; end: string }[]>`
          SELECT to_char(l AT TIME ZONE ${tz} AT TIME ZONE 'UTC', ${fmt}) AS start,
                 to_char((l + ${step}::interval) AT TIME ZONE ${tz} AT TIME ZONE 'UTC', ${fmt}) AS end
          FROM generate_series(date_trunc(${q.groupBy}, ${range.from}::timestamptz AT TIME ZONE ${tz}),
                               (${range.to}::timestamptz - interval '1 millisecond') AT TIME ZONE ${tz}, ${step}::interval) AS l`
  const clipped = buckets.map((b) => ({
    from: b.start < range.from ? range.from : b.start,
    to: b.end > range.to ? range.to : b.end,
  }))
  const sums = await analyticsRead(ctx.reads, (sql) => sumRanges(sql, f, 'none', clipped))
  return {
    data: buckets.map((b, i) => ({ bucketStart: b.start, value: valueOf(q.metric, sums[i].byKey.get('') ?? emptySums()) })),
  }
}

function valueOf(metric: TimeseriesMetric, s: Sums): number | null {
  const m = metricsOf(s)
  switch (metric) {
    case 'conversationsCreated':
    case 'conversationsResolved':
    case 'messagesReceived':
    case 'messagesSent':
      return m[metric]
    case 'firstResponseTime':
    case 'resolutionTime':
      return m[metric].avg
    case 'csatResponses':
      return m.csat.responses
    case 'csatAverage':
      return m.csat.average
    case 'csatSatisfiedShare':
      return m.csat.satisfiedShare
  }
}

/**
 * GET /analytics/live: the open conversations now, counted over the partial index
 * conv_open_live_idx (index-only); members and visitors online from ctx.presence (Redis, or the
 * in-process store in single-process mode), visitors narrowed to the channel by the guests' rows.
 */
export async function live(ctx: Ctx, q: { channelId?: string }): Promise<LiveView> {
  const { workspaceId } = memberOf(ctx)
  const [counts] = await ctx.sql<{ open: number; unassigned: number; unattended: number; waiting: number }[]>`
    SELECT count(*)::int AS open,
           count(*) FILTER (WHERE assigned_agent_id IS NULL)::int AS unassigned,
           count(*) FILTER (WHERE awaiting_reply)::int AS unattended,
           count(*) FILTER (WHERE last_public_sender = 'GUEST')::int AS waiting
    FROM conversations
    WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND status = 'OPEN'
      ${q.channelId !== undefined ? ctx.sql`AND channel_id = ${q.channelId}::uuid` : ctx.sql``}`
  const members = await ctx.sql<{ userId: string }[]>`SELECT user_id AS "userId" FROM members WHERE workspace_id = ${workspaceId} AND status = 'active'`
  let onlineAgents = 0
  try {
    const presence = await ctx.presence.read(workspaceId, members.map((m) => m.userId))
    onlineAgents = Object.values(presence).filter((p) => p === 'online').length
  } catch (err) {
    ctx.log.warn({ err: { message: (err as Error).message } }, 'presence unavailable; reporting no agent online')
  }
  let onlineVisitors = 0
  try {
    const ids = await ctx.presence.onlineVisitorSet(workspaceId)
    if (q.channelId === undefined) onlineVisitors = ids.length
    else if (ids.length > 0) {
      const [row] = await ctx.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM guests
        WHERE workspace_id = ${workspaceId} AND channel_id = ${q.channelId}::uuid AND id = ANY(${ids}::uuid[])`
      onlineVisitors = row.n
    }
  } catch (err) {
    ctx.log.warn({ err: { message: (err as Error).message } }, 'presence unavailable; reporting no visitor online')
  }
  return { ...counts, onlineAgents, onlineVisitors }
}
