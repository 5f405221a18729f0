import { Type } from '@sinclair/typebox'
import { Email, Name, Timestamp, Uuid } from './common.js'

export const CreateWorkspaceBody = Type.Object(
  { name: Name, ownerName: Type.Optional(Name), ownerEmail: Type.Optional(Email) },
  { additionalProperties: false },
)

export const Workspace = Type.Object({ id: Uuid, name: Type.String(), createdAt: Timestamp })

export const WorkspaceMembership = Type.Object({
  id: Uuid,
  name: Type.String(),
  role: Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('agent')]),
  createdAt: Timestamp,
})

export const WorkspaceList = Type.Object({ data: Type.Array(WorkspaceMembership) })
