import { Type, type Static } from '@sinclair/typebox'
import { assignmentActions, assignmentReasons, conversationPriorities, deliveryStatuses, conversationStatus, presenceStatuses, senderTypes, slaTargets } from '../src/db/vocabulary.js'
import { Attachment } from './attachments.js'
import { Cursor, CursorPage, Limit, Literals, Nullable, Timestamp, UserId, Uuid } from './common.js'

/** Request and response shapes of /conversations and /api/public/conversations (src/conversations/). */

export const ConversationStatus = Literals(conversationStatus)
/** A conversation's priority (API.md section 17); null is none. */
export const Priority = Literals(conversationPriorities)
/** A label as a conversation shows it (the full Label is in schemas/triage.ts). */
export const LabelRef = Type.Object({ id: Uuid, name: Type.String(), color: Type.String() })

/** The Conversation's `sla` (API.md section 18, src/sla/); null without a policy. */
export const ConversationSla = Nullable(
  Type.Object({
    policyId: Uuid,
    policyName: Type.String(),
    firstResponseDueAt: Nullable(Timestamp),
    nextResponseDueAt: Nullable(Timestamp),
    resolutionDueAt: Nullable(Timestamp),
    status: Literals(['ON_TRACK', 'BREACHED', 'MET'] as const),
    breaches: Type.Array(Literals(slaTargets)),
  }),
)
export type ConversationSlaView = Static<typeof ConversationSla>

export const Conversation = Type.Object(
  {
    id: Uuid,
    workspaceId: Uuid,
    channelId: Uuid,
    guestId: Uuid,
    guest: Type.Object({ id: Uuid, name: Type.String(), email: Nullable(Type.String()) }),
    status: ConversationStatus,
    pinned: Type.Boolean(),
    assignedAgentId: Nullable(Type.String()),
    assignedAgent: Nullable(Type.Object({ userId: Type.String(), name: Type.String() })),
    seen: Type.Boolean(),
    unreadCount: Type.Integer(),
    lastMessageAt: Timestamp,
    lastMessagePreview: Nullable(Type.String()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    closedAt: Nullable(Timestamp),
    /** Section 17: its labels by name, its priority, and the wake-up time while SNOOZED until one. */
    labels: Type.Array(LabelRef),
    priority: Nullable(Priority),
    snoozedUntil: Nullable(Timestamp),
    /** Its team (API.md section 16). */
    teamId: Nullable(Uuid),
    team: Nullable(Type.Object({ id: Uuid, name: Type.String() })),
    /** When it started waiting in its team's queue; null when not waiting. */
    queuedAt: Nullable(Timestamp),
    /** Its place in the queue, on a single conversation read and the visitor's events; null when not queued. */
    queue: Type.Optional(Nullable(Type.Object({ position: Type.Integer({ minimum: 1 }), estimatedWaitSeconds: Nullable(Type.Integer()) }))),
    /** Its service level (section 18). */
    sla: ConversationSla,
    /** An e-mail conversation's subject (the first mail's, API.md section 19); null on web chat. */
    subject: Nullable(Type.String()),
  },
  { $id: 'Conversation' },
)
export type ConversationView = Static<typeof Conversation>

export const Message = Type.Object(
  {
    id: Uuid,
    conversationId: Uuid,
    senderType: Literals(senderTypes),
    senderId: Nullable(Type.String()),
    senderName: Type.String(),
    body: Type.String(),
    /** An agents' internal note (API.md section 12): members only. */
    private: Type.Boolean(),
    /** Its files (API.md section 10), empty when there are none. */
    attachments: Type.Array(Attachment),
    createdAt: Timestamp,
    /** An e-mail reply's delivery (API.md section 19); null on web chat, notes and inbound mail. */
    delivery: Nullable(Type.Object({ status: Literals(deliveryStatuses), error: Nullable(Type.String()), at: Timestamp })),
  },
  { $id: 'Message' },
)
export type MessageView = Static<typeof Message>

// Lists and public views

/** Query strings of the conversation lists (API.md section 5, "List query"). Unknown parameters are a 400. */
const lit = <T extends string>(values: readonly T[], def: T) => Literals(values, { default: def })

/** A team id, or `none`: conversations of no team (API.md section 16); the lists' and the saved views' filter. */
export const TeamFilter = Type.Union([Uuid, Type.Literal('none')])

const listFields = {
  limit: Limit,
  cursor: Type.Optional(Cursor),
  channelId: Type.Optional(Uuid),
  teamId: Type.Optional(TeamFilter),
  unassignedOnly: Type.Boolean({ default: false }),
  readStatus: lit(['all', 'read', 'unread'] as const, 'all'),
  sortOrder: lit(['desc', 'asc'] as const, 'desc'),
  // Section 17 (src/conversations/lists.ts parses the comma-separated values)
  labelIds: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'comma-separated label ids (up to 5): conversations holding all of them' })),
  priority: Type.Optional(
    Type.String({ pattern: '^(none|low|medium|high|urgent)(,(none|low|medium|high|urgent)){0,4}$', description: 'comma-separated priorities; none: no priority' }),
  ),
  // Section 18: breached (breaches not empty) or due (a target running, overdue or not).
  sla: Type.Optional(Literals(['breached', 'due'] as const)),
}
/** `me`, `none` or a userId. */
const Assignee = Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'me, none or a userId' }))

export const OpenListQuery = Type.Object(
  {
    ...listFields,
    sortBy: lit(['lastMessageAt', 'createdAt', 'updatedAt', 'priority', 'slaDueAt'] as const, 'lastMessageAt'),
    status: lit(['open', 'pending', 'snoozed', 'active'] as const, 'open'),
    assignee: Assignee,
  },
  { additionalProperties: false },
)

export const MineListQuery = Type.Object(
  {
    ...listFields,
    sortBy: lit(['lastMessageAt', 'createdAt', 'updatedAt', 'priority', 'slaDueAt'] as const, 'lastMessageAt'),
    status: Type.Optional(ConversationStatus),
  },
  { additionalProperties: false },
)

export const ClosedListQuery = Type.Object(
  { ...listFields, sortBy: lit(['closedAt', 'lastMessageAt', 'createdAt', 'updatedAt'] as const, 'closedAt'), assignee: Assignee },
  { additionalProperties: false },
)

export const HistoryQuery = Type.Object({ limit: Limit, cursor: Type.Optional(Cursor) }, { additionalProperties: false })

/** Any string: a malformed guest id is a 404 like an unknown one (ids cannot be probed). */
export const HistoryParams = Type.Object({ guestId: Type.String() })

export const ConversationPage = CursorPage(Conversation)

export const AvailableAgent = Type.Object({
  userId: Type.String(),
  name: Type.String(),
  presence: Literals(presenceStatuses),
  openAssigned: Type.Integer(),
})
export type AvailableAgentView = Static<typeof AvailableAgent>
export const AvailableAgents = Type.Object({ data: Type.Array(AvailableAgent) })

/** Public (anonymous) views. */

export const PublicStatus = Type.Object({ id: Uuid, deleted: Type.Boolean(), status: ConversationStatus })

export const PublicAgent = Type.Object({
  agent: Nullable(Type.Object({ name: Type.String(), avatarUrl: Nullable(Type.String()) })),
})

export const PublicMeta = Type.Object({
  id: Uuid,
  status: ConversationStatus,
  assigned: Type.Boolean(),
  createdAt: Timestamp,
  lastMessageAt: Timestamp,
  deleted: Type.Boolean(),
})

// One conversation, its messages and the unread counters


export const CreateConversationBody = Type.Object(
  { channelId: Uuid, guestId: Uuid },
  { additionalProperties: false },
)

export const AssignBody = Type.Object(
  { agentId: Type.String({ minLength: 1, maxLength: 255 }) },
  { additionalProperties: false },
)

export const PostMessageBody = Type.Object(
  {
    /** May be empty when attachmentIds is not (checked by postMessage). */
    body: Type.String({ maxLength: 10_000 }),
    clientMessageId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    /** Members only (a visitor sending it at all: 400): an internal note. */
    private: Type.Optional(Type.Boolean()),
    /** Members to notify, only with private: true; each an active member (else 400 INVALID_MENTION). */
    mentions: Type.Optional(Type.Array(UserId, { maxItems: 20 })),
    attachmentIds: Type.Optional(Type.Array(Uuid, { maxItems: 10 })),
  },
  { additionalProperties: false },
)

export const MessagesQuery = Type.Object(
  { limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
  { additionalProperties: false },
)

export const MessagePage = CursorPage(Message)

export const HistoryEntry = Type.Object({
  action: Literals(assignmentActions),
  agentId: Nullable(Type.String()),
  previousAgentId: Nullable(Type.String()),
  byUserId: Nullable(Type.String()),
  /** Why (API.md section 16); null on entries older than teams. */
  reason: Nullable(Literals(assignmentReasons)),
  at: Timestamp,
})
export type HistoryEntryView = Static<typeof HistoryEntry>
export const HistoryList = Type.Object({ data: Type.Array(HistoryEntry) })

export const UnreadCount = Type.Object({
  total: Type.Integer(),
  mine: Type.Integer(),
  unassigned: Type.Integer(),
  messages: Type.Integer(),
  byChannel: Type.Record(Type.String(), Type.Integer()),
  byTeam: Type.Record(Type.String(), Type.Integer()),
})
export type UnreadCountView = Static<typeof UnreadCount>

const ScopeCount = Type.Object({ conversations: Type.Integer(), messages: Type.Integer() })
export const CounterSnapshot = Type.Object({
  total: Type.Integer(),
  unassigned: Type.Integer(),
  messages: Type.Integer(),
  byAgent: Type.Record(Type.String(), ScopeCount),
  byChannel: Type.Record(Type.String(), ScopeCount),
})
export const ReconcileResult = Type.Object({
  before: CounterSnapshot,
  after: CounterSnapshot,
  conversationsFixed: Type.Integer(),
  corrected: Type.Boolean(),
})
export type CounterSnapshotView = Static<typeof CounterSnapshot>
export type ReconcileResultView = Static<typeof ReconcileResult>
