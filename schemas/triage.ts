import { Type, type Static } from '@sinclair/typebox'
import { viewScopes } from '../src/db/vocabulary.js'
import { Cursor, Limit, Literals, Nullable, Timestamp, Uuid } from './common.js'
import { Priority, TeamFilter } from './conversations.js'
import { ConversationTeamBody } from './teams.js'

/** Request and response shapes of /labels, /views and the triage actions (API.md section 17, src/triage/). */

const LabelName = Type.String({ minLength: 1, maxLength: 50 })
const Color = Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: '#rrggbb' })
const Description = Type.String({ maxLength: 200 })

export const Label = Type.Object(
  { id: Uuid, name: Type.String(), color: Type.String(), description: Type.String(), createdAt: Timestamp },
  { $id: 'Label' },
)
export type LabelView = Static<typeof Label>
export const LabelList = Type.Object({ data: Type.Array(Label) })

export const CreateLabelBody = Type.Object(
  { name: LabelName, color: Color, description: Type.Optional(Description) },
  { additionalProperties: false },
)
export type CreateLabelInput = Static<typeof CreateLabelBody>
export const UpdateLabelBody = Type.Object(
  { name: Type.Optional(LabelName), color: Type.Optional(Color), description: Type.Optional(Description) },
  { additionalProperties: false },
)
export type UpdateLabelInput = Static<typeof UpdateLabelBody>

/**
 * Label ids as strings: what is not 0..20 distinct labels of the workspace is 400 INVALID_LABEL
 * (the domain checks it, so a malformed id gets the contract's code, not VALIDATION_ERROR).
 */
export const LabelIds = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 100 })
export const SetLabelsBody = Type.Object({ labelIds: LabelIds }, { additionalProperties: false })
export const PriorityBody = Type.Object({ priority: Nullable(Priority) }, { additionalProperties: false })
export const SnoozeBody = Type.Object(
  { until: Nullable(Type.String({ format: 'date-time', description: 'a future time at most 366 days ahead; null: until the guest writes' })) },
  { additionalProperties: false },
)

/** POST /conversations/bulk: the ids and one action with its parameters. */
export const bulkActions = ['assign', 'unassign', 'team', 'close', 'reopen', 'pending', 'snooze', 'priority', 'labels:add', 'labels:remove', 'delete'] as const
export type BulkAction = (typeof bulkActions)[number]
export const BulkBody = Type.Object(
  {
    ids: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 100 }),
    action: Literals(bulkActions),
    agentId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    /** `team`: as PATCH /conversations/:id/team's body (a team of the workspace, or null; else INVALID_TEAM). */
    teamId: Type.Optional(ConversationTeamBody.properties.teamId),
    until: Type.Optional(Nullable(Type.String({ format: 'date-time' }))),
    priority: Type.Optional(Nullable(Priority)),
    labelIds: Type.Optional(LabelIds),
  },
  { additionalProperties: false },
)
export type BulkInput = Static<typeof BulkBody>
export const BulkResult = Type.Object({
  results: Type.Array(Type.Object({ id: Type.String(), statusCode: Type.Integer(), code: Type.Optional(Type.String()) })),
})
export type BulkResultView = Static<typeof BulkResult>

// Saved views

/** The list parameters a view keeps, as JSON (API.md section 17). */
export const ViewFilters = Type.Object(
  {
    status: Type.Optional(Literals(['open', 'pending', 'snoozed', 'active'] as const)),
    channelId: Type.Optional(Uuid),
    /** A team id (a team of the workspace when the view is written, else INVALID_TEAM), or `none`: as the lists' `teamId`. */
    teamId: Type.Optional(TeamFilter),
    labelIds: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: 5 })),
    priority: Type.Optional(Type.Array(Literals(['none', 'low', 'medium', 'high', 'urgent'] as const), { minItems: 1, maxItems: 5 })),
    assignee: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'me, none or a userId' })),
    readStatus: Type.Optional(Literals(['all', 'read', 'unread'] as const)),
    unassignedOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type ViewFiltersInput = Static<typeof ViewFilters>
const ViewSortBy = Literals(['lastMessageAt', 'createdAt', 'updatedAt', 'priority', 'slaDueAt'] as const)
const ViewSortOrder = Literals(['desc', 'asc'] as const)
const ViewName = Type.String({ minLength: 1, maxLength: 100 })

export const View = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    scope: Literals(viewScopes),
    filters: ViewFilters,
    sortBy: ViewSortBy,
    sortOrder: ViewSortOrder,
    ownerId: Type.String(),
    createdAt: Timestamp,
  },
  { $id: 'View' },
)
export type ViewView = Static<typeof View>
export const ViewList = Type.Object({ data: Type.Array(View) })
export const CreateViewBody = Type.Object(
  {
    name: ViewName,
    scope: Type.Optional(Literals(viewScopes)),
    filters: Type.Optional(ViewFilters),
    sortBy: Type.Optional(ViewSortBy),
    sortOrder: Type.Optional(ViewSortOrder),
  },
  { additionalProperties: false },
)
export type CreateViewInput = Static<typeof CreateViewBody>
export const UpdateViewBody = Type.Object(
  {
    name: Type.Optional(ViewName),
    filters: Type.Optional(ViewFilters),
    sortBy: Type.Optional(ViewSortBy),
    sortOrder: Type.Optional(ViewSortOrder),
  },
  { additionalProperties: false },
)
export type UpdateViewInput = Static<typeof UpdateViewBody>
export const ViewConversationsQuery = Type.Object(
  { limit: Limit, cursor: Type.Optional(Cursor) },
  { additionalProperties: false },
)
