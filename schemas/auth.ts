import { Type, type Static } from '@sinclair/typebox'
import { memberRoles, memberStatuses } from '../src/db/vocabulary.js'
import { Email, Literals, Name, Timestamp, UserId, Uuid } from './common.js'

/** Request and response shapes of /auth and /auth/members (src/auth/). */

export const VisitorBootstrapBody = Type.Object(
  {
    channelId: Uuid,
    name: Name,
    /** Optional: a visitor may chat before giving an address; identityHash requires it. */
    email: Type.Optional(Email),
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

// Members

export const Role = Literals(memberRoles)
export const MemberStatus = Literals(memberStatuses)

export const Member = Type.Object({
  userId: Type.String(),
  name: Type.String(),
  email: Type.String(),
  role: Role,
  status: MemberStatus,
  joinedAt: Timestamp,
})
export type MemberView = Static<typeof Member>

export const MemberPage = Type.Object({
  data: Type.Array(Member),
  page: Type.Integer(),
  pageSize: Type.Integer(),
  total: Type.Integer(),
})

export const MemberListQuery = Type.Object(
  {
    page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
    pageSize: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  },
  { additionalProperties: false },
)

export const CreateMemberBody = Type.Object(
  { userId: UserId, name: Name, email: Email, role: Role },
  { additionalProperties: false },
)

export const UpdateMemberBody = Type.Object(
  { role: Type.Optional(Role), status: Type.Optional(MemberStatus) },
  { additionalProperties: false, minProperties: 1 },
)

export const MemberParams = Type.Object({ userId: UserId })
