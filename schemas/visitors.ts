import { Type, type Static } from '@sinclair/typebox'
import { Cursor, CursorPage, Email, Limit, Name, Nullable, Timestamp, Uuid } from './common.js'

/** Request and response shapes of /visitors (src/visitors/). */

export const PageVisit = Type.Object({ url: Type.String(), title: Type.String(), at: Timestamp })

const AttributeValue = Type.Union([Type.String({ maxLength: 500 }), Type.Number(), Type.Boolean()])
const AttributeName = { minLength: 1, maxLength: 64 }
const ATTRIBUTES_RULE = 'A flat object of at most 50 keys (1..64 characters) with string (up to 500 characters), number or boolean values'

/** A flat object of at most 50 keys (1..64 chars) with string (<= 500 chars), number or boolean values. */
export const Attributes = Type.Object({}, { additionalProperties: AttributeValue, maxProperties: 50, propertyNames: AttributeName, description: ATTRIBUTES_RULE })

export const Visitor = Type.Object(
  {
    id: Uuid,
    channelId: Uuid,
    name: Type.String(),
    email: Nullable(Type.String()),
    verified: Type.Boolean(),
    attributes: Attributes,
    online: Type.Boolean(),
    currentPage: Nullable(PageVisit),
    createdAt: Timestamp,
    lastSeenAt: Timestamp,
    conversationCount: Type.Integer(),
  },
  { $id: 'Visitor' },
)
export type VisitorView = Static<typeof Visitor>

export const VisitorProfile = Type.Object({ ...Visitor.properties, pageVisits: Type.Array(PageVisit) })
export type VisitorProfileView = Static<typeof VisitorProfile>

export const VisitorPage = CursorPage(Visitor)
export const OnlineVisitors = Type.Object({ data: Type.Array(Visitor) })

export const VisitorListQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ minLength: 3, maxLength: 200 })),
    channelId: Type.Optional(Uuid),
    online: Type.Optional(Type.Boolean()),
    limit: Limit,
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
)

/** Any string: a malformed guest id is a 404 like an unknown one. */
export const GuestParams = Type.Object({ guestId: Type.String() })

/** PATCH merges `attributes` into the stored ones; a null value removes that key. */
export const UpdateVisitorBody = Type.Object(
  {
    name: Type.Optional(Name),
    email: Type.Optional(Nullable(Email)),
    attributes: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: Type.Union([AttributeValue, Type.Null()]), maxProperties: 50, propertyNames: AttributeName, description: `${ATTRIBUTES_RULE}; null removes a key` },
      ),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateVisitorInput = Static<typeof UpdateVisitorBody>
