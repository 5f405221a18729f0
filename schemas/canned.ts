import { Type, type Static } from '@sinclair/typebox'
import { cannedScopes } from '../src/db/vocabulary.js'
import { Cursor, CursorPage, Limit, Literals, Timestamp, Uuid } from './common.js'

/** Request and response shapes of /canned-responses (API.md section 11, src/canned/). */

export const CannedScope = Literals(cannedScopes)
export const Shortcut = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$', description: 'typed after / in the composer' })
const Title = Type.String({ maxLength: 200 })
const Body = Type.String({ minLength: 1, maxLength: 5000 })
/** Empty: every channel. Duplicates count once. */
const ChannelIds = Type.Array(Uuid, { maxItems: 100, description: 'channels where the picker offers it; empty: every channel' })

export const CannedResponse = Type.Object(
  {
    id: Uuid,
    shortcut: Type.String(),
    title: Type.String(),
    body: Type.String(),
    scope: CannedScope,
    ownerId: Type.String(),
    channelIds: Type.Array(Uuid),
    usageCount: Type.Integer(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'CannedResponse' },
)
export type CannedView = Static<typeof CannedResponse>

export const CannedListQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'the / picker: shortcut prefix, then shortcut substring, then title or body substring' })),
    scope: Type.Optional(CannedScope),
    channelId: Type.Optional(Uuid),
    limit: Limit,
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
)
export type CannedListQueryInput = Static<typeof CannedListQuery>

export const CannedPage = CursorPage(CannedResponse)

export const CreateCannedBody = Type.Object(
  { shortcut: Shortcut, title: Type.Optional(Title), body: Body, scope: CannedScope, channelIds: Type.Optional(ChannelIds) },
  { additionalProperties: false },
)
export type CreateCannedInput = Static<typeof CreateCannedBody>

export const UpdateCannedBody = Type.Object(
  { shortcut: Type.Optional(Shortcut), title: Type.Optional(Title), body: Type.Optional(Body), channelIds: Type.Optional(ChannelIds) },
  { additionalProperties: false },
)
export type UpdateCannedInput = Static<typeof UpdateCannedBody>

export const RenderBody = Type.Object({ conversationId: Type.String({ maxLength: 100 }) }, { additionalProperties: false })

export const RenderResult = Type.Object({
  body: Type.String(),
  /** Known variables that had no value (their fallback, or nothing, was used). */
  missing: Type.Array(Type.String()),
})
export type RenderResultView = Static<typeof RenderResult>
