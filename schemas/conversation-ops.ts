import { Type, type Static } from '@sinclair/typebox'
import { assignmentActions } from '../src/db/schema.js'
import { Cursor, CursorPage, Limit, Literals, Nullable, Timestamp, Uuid } from './common.js'
import { Message } from './conversations.js'

/** Request and response shapes of one conversation's routes, its messages and its unread counters. */

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
    body: Type.String({ minLength: 1, maxLength: 10_000 }),
    clientMessageId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
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
