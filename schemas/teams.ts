import { Type, type Static } from '@sinclair/typebox'
import { teamAssignments } from '../src/db/vocabulary.js'
import { Literals, Nullable, Timestamp, UserId, Uuid } from './common.js'

/** Request and response shapes of /teams (API.md section 16, src/teams/). */

export const TeamAssignment = Literals(teamAssignments)
const TeamName = Type.String({ minLength: 1, maxLength: 100 })
const Description = Type.String({ maxLength: 500 })
/** OPEN conversations a member may hold before routing skips them; null: no limit (the team's, for a member). */
const Capacity = Type.Integer({ minimum: 1, maximum: 1000 })

export const TeamMember = Type.Object({ userId: Type.String(), name: Type.String(), capacity: Nullable(Type.Integer()) })

export const Team = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    assignment: TeamAssignment,
    capacity: Nullable(Type.Integer()),
    private: Type.Boolean(),
    members: Type.Array(TeamMember),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Team' },
)
export type TeamView = Static<typeof Team>

export const TeamList = Type.Object({ data: Type.Array(Team) })

export const CreateTeamBody = Type.Object(
  {
    name: TeamName,
    description: Type.Optional(Nullable(Description)),
    assignment: Type.Optional(TeamAssignment),
    capacity: Type.Optional(Nullable(Capacity)),
    private: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type CreateTeamInput = Static<typeof CreateTeamBody>

export const UpdateTeamBody = Type.Partial(CreateTeamBody, { additionalProperties: false })
export type UpdateTeamInput = Static<typeof UpdateTeamBody>

export const TeamMemberParams = Type.Object({ id: Type.String(), userId: UserId })

export const PutTeamMemberBody = Type.Object({ capacity: Type.Optional(Nullable(Capacity)) }, { additionalProperties: false })

export const QueueEntry = Type.Object({ conversationId: Uuid, queuedAt: Timestamp, position: Type.Integer({ minimum: 1 }) })
export const TeamQueue = Type.Object({ data: Type.Array(QueueEntry) })
export type TeamQueueView = Static<typeof TeamQueue>

/** PATCH /conversations/:id/team */
export const ConversationTeamBody = Type.Object({ teamId: Nullable(Type.String({ maxLength: 100 })) }, { additionalProperties: false })
