import { Type, type Static } from '@sinclair/typebox'
import { Name, Timestamp, Uuid } from './common.js'

/** A browser origin: scheme, host and optional port, nothing after it ("https://shop.example.com"). */
export const Origin = Type.String({ pattern: '^https?://[^/?#\\s]+$', maxLength: 255 })
export const AllowedOrigins = Type.Array(Origin, { maxItems: 100 })

export const Channel = Type.Object({
  id: Uuid,
  name: Type.String(),
  kind: Type.Literal('web'),
  active: Type.Boolean(),
  allowedOrigins: Type.Array(Type.String()),
  requireChannelToken: Type.Boolean(),
  channelToken: Type.String(),
  /** Only for callers with channels:manage. */
  identitySecret: Type.Optional(Type.String()),
  createdAt: Timestamp,
})
export type ChannelView = Static<typeof Channel>

export const ChannelList = Type.Object({ data: Type.Array(Channel) })

export const CreateChannelBody = Type.Object(
  { name: Name, allowedOrigins: Type.Optional(AllowedOrigins), requireChannelToken: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
)

export const UpdateChannelBody = Type.Object(
  {
    name: Type.Optional(Name),
    allowedOrigins: Type.Optional(AllowedOrigins),
    requireChannelToken: Type.Optional(Type.Boolean()),
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
)
