import { Type, type Static } from '@sinclair/typebox'
import { expectedReplyTimes } from '../src/db/vocabulary.js'
import { Email, Literals, Nullable, Timestamp, Uuid } from './common.js'

/** Request and response shapes of /support and /conversations/:id/csat (src/support/). */

export const WidgetConfig = Type.Object({
  channelId: Uuid,
  name: Type.String(),
  color: Type.String(),
  greeting: Type.String(),
  awayMessage: Type.String(),
  expectedReplyTime: Literals(expectedReplyTimes),
  online: Type.Boolean(),
  withinOfficeHours: Type.Boolean(),
  csatEnabled: Type.Boolean(),
})

export const CsatBody = Type.Object(
  {
    conversationId: Uuid,
    rating: Type.Integer({ minimum: 1, maximum: 5 }),
    comment: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
)
export type CsatInput = Static<typeof CsatBody>

export const Csat = Type.Object({
  conversationId: Uuid,
  rating: Type.Integer(),
  comment: Nullable(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type CsatView = Static<typeof Csat>

export const OfflineMessageBody = Type.Object(
  {
    body: Type.String({ minLength: 1, maxLength: 10_000 }),
    email: Type.Optional(Email),
  },
  { additionalProperties: false },
)
export type OfflineMessageInput = Static<typeof OfflineMessageBody>
