import { Type, type Static } from '@sinclair/typebox'
import { Email, Name, Timestamp, Uuid } from './common.js'
import { Role } from './auth.js'

export const CreateWorkspaceBody = Type.Object(
  { name: Name, ownerName: Type.Optional(Name), ownerEmail: Type.Optional(Email) },
  { additionalProperties: false },
)

export const Workspace = Type.Object({ id: Uuid, name: Type.String(), createdAt: Timestamp })
export type WorkspaceView = Static<typeof Workspace>

export const WorkspaceMembership = Type.Object({
  id: Uuid,
  name: Type.String(),
  role: Role,
  createdAt: Timestamp,
})
export type WorkspaceMembershipView = Static<typeof WorkspaceMembership>

export const WorkspaceList = Type.Object({ data: Type.Array(WorkspaceMembership) })
