import { Type, type Static } from '@sinclair/typebox'
import { presenceStatuses } from '../src/presence.js'
import { Cursor, CursorPage, Limit, Literals, Nullable, Timestamp, Uuid } from './common.js'
import { Conversation, ConversationStatus } from './conversations.js'

/** Query strings of the conversation lists (API.md section 5, "List query"). Unknown parameters are a 400. */
const lit = <T extends string>(values: readonly T[], def: T) => Literals(values, { default: def })

const listFields = {
  limit: Limit,
  cursor: Type.Optional(Cursor),
  channelId: Type.Optional(Uuid),
  unassignedOnly: Type.Boolean({ default: false }),
  readStatus: lit(['all', 'read', 'unread'] as const, 'all'),
  sortOrder: lit(['desc', 'asc'] as const, 'desc'),
}

export const OpenListQuery = Type.Object(
  { ...listFields, sortBy: lit(['lastMessageAt', 'createdAt', 'updatedAt'] as const, 'lastMessageAt') },
  { additionalProperties: false },
)

export const MineListQuery = Type.Object(
  {
    ...listFields,
    sortBy: lit(['lastMessageAt', 'createdAt', 'updatedAt'] as const, 'lastMessageAt'),
    status: Type.Optional(ConversationStatus),
  },
  { additionalProperties: false },
)

export const ClosedListQuery = Type.Object(
  { ...listFields, sortBy: lit(['closedAt', 'lastMessageAt', 'createdAt', 'updatedAt'] as const, 'closedAt') },
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
