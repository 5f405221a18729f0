import { Type, type Static } from '@sinclair/typebox'
import { Cursor, CursorPage, Limit, Nullable, Timestamp, Uuid } from './common.js'

/** Request and response shapes of /mentions (API.md section 12, src/mentions/). */

export const Mention = Type.Object(
  {
    id: Uuid,
    conversationId: Uuid,
    messageId: Uuid,
    byUserId: Type.String(),
    byName: Type.String(),
    excerpt: Type.String(),
    createdAt: Timestamp,
    readAt: Nullable(Timestamp),
  },
  { $id: 'Mention' },
)
export type MentionView = Static<typeof Mention>

export const MentionListQuery = Type.Object(
  {
    unread: Type.Optional(Type.Boolean({ description: 'true: unread only; false: read only; absent: all' })),
    limit: Limit,
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
)

export const MentionPage = CursorPage(Mention)
export const MentionCount = Type.Object({ count: Type.Integer() })
export const ReadAllResult = Type.Object({ updated: Type.Integer() })
