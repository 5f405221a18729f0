import { Type, type Static } from '@sinclair/typebox'
import { conversationStatus, senderTypes } from '../src/db/schema.js'
import { Literals, Nullable, Timestamp, Uuid } from './common.js'

export const ConversationStatus = Literals(conversationStatus)

export const Conversation = Type.Object(
  {
    id: Uuid,
    workspaceId: Uuid,
    channelId: Uuid,
    guestId: Uuid,
    guest: Type.Object({ id: Uuid, name: Type.String(), email: Type.String() }),
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
    createdAt: Timestamp,
  },
  { $id: 'Message' },
)
export type MessageView = Static<typeof Message>
