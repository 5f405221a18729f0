import { Type, type Static } from '@sinclair/typebox'
import { Email, Name, Timestamp, Uuid } from './common.js'

export const VisitorBootstrapBody = Type.Object(
  {
    channelId: Uuid,
    name: Name,
    email: Email,
    /** Hex HMAC-SHA256 of the trimmed, lower-cased e-mail keyed with the channel's identitySecret. */
    identityHash: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
  },
  { additionalProperties: false },
)

export const VisitorSession = Type.Object({
  visitorSession: Type.String(),
  guestId: Uuid,
  channelId: Uuid,
  workspaceId: Uuid,
  expiresAt: Timestamp,
})
export type VisitorSessionView = Static<typeof VisitorSession>
