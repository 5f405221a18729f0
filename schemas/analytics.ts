import { Type, type Static } from '@sinclair/typebox'
import { Literals, Name, Nullable, Timestamp, UserId, Uuid } from './common.js'

/** The common query of every analytics route but /live (API.md section 15). */
const rangeFields = {
  from: Type.Optional(Type.String({ minLength: 10, maxLength: 40, description: 'ISO 8601 date (local midnight in `timezone`) or date-time' })),
  to: Type.Optional(Type.String({ minLength: 10, maxLength: 40, description: 'exclusive; at most 366 days after `from`' })),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA name, default UTC' })),
  channelId: Type.Optional(Uuid),
  agentId: Type.Optional(UserId),
  /** What is attributed to conversations of this team at the moment of each event (API.md section 16). */
  teamId: Type.Optional(Uuid),
}

export const RangeQuery = Type.Object(rangeFields, { additionalProperties: false })

export const LiveQuery = Type.Object({ channelId: Type.Optional(Uuid) }, { additionalProperties: false })

/** What /timeseries can chart: a count, a time (its average) or a rating figure. */
export const timeseriesMetrics = [
  'conversationsCreated',
  'conversationsResolved',
  'messagesReceived',
  'messagesSent',
  'firstResponseTime',
  'resolutionTime',
  'csatResponses',
  'csatAverage',
  'csatSatisfiedShare',
] as const
export type TimeseriesMetric = (typeof timeseriesMetrics)[number]
export const timeseriesGroups = ['hour', 'day', 'week'] as const

export const TimeseriesQuery = Type.Object(
  { ...rangeFields, metric: Literals(timeseriesMetrics), groupBy: Literals<(typeof timeseriesGroups)[number]>(timeseriesGroups, { default: 'day' }) },
  { additionalProperties: false },
)

const Seconds = Nullable(Type.Number({ description: 'seconds; null without samples' }))
const TimeStats = Type.Object({ avg: Seconds, median: Seconds, p90: Seconds })

const SlaStats = Type.Object({ met: Type.Integer(), breached: Type.Integer(), hitRate: Nullable(Type.Number()) })

export const Metrics = Type.Object({
  conversationsCreated: Type.Integer(),
  conversationsResolved: Type.Integer(),
  messagesReceived: Type.Integer(),
  messagesSent: Type.Integer(),
  firstResponseTime: TimeStats,
  resolutionTime: TimeStats,
  csat: Type.Object({ responses: Type.Integer(), average: Nullable(Type.Number()), satisfiedShare: Nullable(Type.Number()) }),
  /** Service levels (API.md section 18): targets met and breached in the period; hitRate = met / (met + breached), null with none. */
  sla: Type.Object({ firstResponse: SlaStats, nextResponse: SlaStats, resolution: SlaStats }),
})
export type MetricsView = Static<typeof Metrics>

export const Live = Type.Object({
  open: Type.Integer(),
  unassigned: Type.Integer(),
  unattended: Type.Integer(),
  waiting: Type.Integer(),
  onlineAgents: Type.Integer(),
  onlineVisitors: Type.Integer(),
})
export type LiveView = Static<typeof Live>

export const Summary = Type.Object({ from: Timestamp, to: Timestamp, current: Metrics, previous: Metrics })
export type SummaryView = Static<typeof Summary>

export const AgentsReport = Type.Object({ data: Type.Array(Type.Object({ userId: UserId, name: Name, metrics: Metrics })) })
export type AgentsReportView = Static<typeof AgentsReport>

export const ChannelsReport = Type.Object({ data: Type.Array(Type.Object({ channelId: Uuid, name: Name, metrics: Metrics })) })
export type ChannelsReportView = Static<typeof ChannelsReport>

export const Timeseries = Type.Object({ data: Type.Array(Type.Object({ bucketStart: Timestamp, value: Nullable(Type.Number()) })) })
export type TimeseriesView = Static<typeof Timeseries>
