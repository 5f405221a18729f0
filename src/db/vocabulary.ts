/**
 * The stored vocabularies, one definition each: the columns of src/db/schema.ts, the TypeBox
 * schemas (schemas/, through Literals) and the domain types all derive from these lists.
 *
 * A module of plain lists, apart from the tables: importing src/db/schema.ts loads drizzle-orm,
 * whose 179 KB package.json Node re-reads for each of the ~110 modules it loads; that cost the
 * API process ~0.5 s at start and ~80-120 MiB of resident memory it kept (docs/deployment.md,
 * "Memory"). The API takes its vocabularies from here and loads drizzle only to migrate
 * (scripts/check-layers.ts, rule 10).
 */
export const memberRoles = ['owner', 'admin', 'agent'] as const
export type Role = (typeof memberRoles)[number]
export const memberStatuses = ['active', 'disabled'] as const
export type MemberStatus = (typeof memberStatuses)[number]
/**
 * CLOSED is a legacy value from imports; it behaves like RESOLVED. PENDING (waiting on the
 * customer) and SNOOZED (until a time or the guest's next message) are not OPEN: they leave the
 * unread counts and the open-conversation cap (API.md section 17, docs/triage.md).
 */
export const conversationStatus = ['OPEN', 'PENDING', 'SNOOZED', 'RESOLVED', 'CLOSED'] as const
export type ConversationStatus = (typeof conversationStatus)[number]
export const senderTypes = ['GUEST', 'AGENT', 'SYSTEM'] as const
/** A conversation's priority (null: none), lowest first: the position + 1 is `priority_rank`. */
export const conversationPriorities = ['low', 'medium', 'high', 'urgent'] as const
export type ConversationPriority = (typeof conversationPriorities)[number]
/** Who sees a saved view: the whole workspace, or only its owner. */
export const viewScopes = ['workspace', 'personal'] as const
export type ViewScope = (typeof viewScopes)[number]
/** Why an image has no thumbnail, for good (docs/attachments.md): over THUMBNAIL_MAX_PIXELS, or sharp could not read it. */
export const thumbRefusals = ['too_large', 'unreadable'] as const
export const assignmentActions = ['ASSIGNED', 'UNASSIGNED'] as const
export type AssignmentAction = (typeof assignmentActions)[number]
/** Why an assignment changed (API.md section 16); null on entries written before teams existed. */
export const assignmentReasons = ['MANUAL', 'AUTO', 'TEAM_CHANGED', 'MEMBER_REMOVED', 'REOPENED'] as const
export type AssignmentReason = (typeof assignmentReasons)[number]
/** How a team hands out its conversations (docs/routing.md). */
export const teamAssignments = ['manual', 'round_robin', 'balanced'] as const
export type TeamAssignment = (typeof teamAssignments)[number]
export const billingProviders = ['provider-a', 'provider-b'] as const
export type BillingProvider = (typeof billingProviders)[number]
export const subscriptionStatuses = ['none', 'active', 'past_due', 'canceled'] as const
export const paymentKinds = ['payment', 'refund', 'failure'] as const
/** Who sees a canned response: the whole workspace, or only its owner. */
export const cannedScopes = ['workspace', 'personal'] as const
export type CannedScope = (typeof cannedScopes)[number]
/**
 * What an analytics event records (docs/analytics.md). `first_response` and
 * `conversation_resolved` carry a duration in seconds, `csat` the rating; `csat_satisfied` is the
 * same rating once more when it is 4 or 5 (the satisfied share is a count ratio).
 */
export const metricKinds = [
  'conversation_created',
  'conversation_reopened',
  'conversation_resolved',
  'first_response',
  'message_received',
  'message_sent',
  'csat',
  'csat_satisfied',
  // Service levels (API.md section 18, src/sla/): one event per target and cycle, met or breached.
  'sla_first_response_met',
  'sla_first_response_breached',
  'sla_next_response_met',
  'sla_next_response_breached',
  'sla_resolution_met',
  'sla_resolution_breached',
] as const
export type MetricKind = (typeof metricKinds)[number]
/** Rollup grains, all in UTC: hour, day, third of a month (from the 1st, 11th, 21st), month. */
export const metricGrains = ['h', 'd', 't', 'm'] as const
export type MetricGrain = (typeof metricGrains)[number]
/** Widget settings (channels.widget, API.md section 14). */
export const expectedReplyTimes = ['minutes', 'hours', 'day'] as const
export type ExpectedReplyTime = (typeof expectedReplyTimes)[number]
/** Office-hours days: Intl's short English weekday names, lower-cased. */
export const weekDays = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
export type WeekDay = (typeof weekDays)[number]
/** A member's presence (API.md `user:presence`), kept in Redis by src/presence.ts, not in a table. */
export const presenceStatuses = ['online', 'away', 'offline'] as const
export type PresenceStatus = (typeof presenceStatuses)[number]
/** The targets of an SLA policy (API.md section 18), as the API names them. */
export const slaTargets = ['FIRST_RESPONSE', 'NEXT_RESPONSE', 'RESOLUTION'] as const
export type SlaTarget = (typeof slaTargets)[number]
/** A channel's kind, fixed at creation (API.md section 19): the web widget or a mailbox. */
export const channelKinds = ['web', 'email'] as const
export type ChannelKind = (typeof channelKinds)[number]
/** An e-mail channel's health (`email.status.state`): the last check, sync or send. */
export const emailStates = ['ok', 'error'] as const
export type EmailState = (typeof emailStates)[number]
/** A mail Parley received (inbound, src/email/ inbound) or sent (outbound). */
export const emailDirections = ['in', 'out'] as const
export type EmailDirection = (typeof emailDirections)[number]
/** An e-mail reply's delivery (Message `delivery.status`, API.md section 19). */
export const deliveryStatuses = ['queued', 'sent', 'failed'] as const
export type DeliveryStatus = (typeof deliveryStatuses)[number]
