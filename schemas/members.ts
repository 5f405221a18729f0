import { Type } from '@sinclair/typebox'
import { Email, Name, Timestamp, UserId } from './common.js'

export const Role = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('agent')])
export const MemberStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled')])

export const Member = Type.Object({
  userId: Type.String(),
  name: Type.String(),
  email: Type.String(),
  role: Role,
  status: MemberStatus,
  joinedAt: Timestamp,
})

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
