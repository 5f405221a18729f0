import { Type } from '@sinclair/typebox'
import { Cursor, CursorPage, Limit, Nullable, Timestamp, Uuid } from './common.js'
import { Message } from './conversations.js'

/** Request and response shapes of the single-conversation routes (routes/conversations/index.ts). */

/** `:id` is a plain string: a malformed id is a 404 from the domain code, not a 400. */
export const IdParams = Type.Object({ id: Type.String() })

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
  action: Type.Union([Type.Literal('ASSIGNED'), Type.Literal('UNASSIGNED')]),
  agentId: Nullable(Type.String()),
  previousAgentId: Nullable(Type.String()),
  byUserId: Nullable(Type.String()),
  at: Timestamp,
})
export const HistoryList = Type.Object({ data: Type.Array(HistoryEntry) })

export const DeletedConversation = Type.Object({ id: Uuid, deleted: Type.Literal(true) })

export const UnreadCount = Type.Object({
  total: Type.Integer(),
  mine: Type.Integer(),
  unassigned: Type.Integer(),
  messages: Type.Integer(),
  byChannel: Type.Record(Type.String(), Type.Integer()),
})

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
