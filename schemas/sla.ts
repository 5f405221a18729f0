import { Type, type Static } from '@sinclair/typebox'
import { weekDays } from '../src/db/schema.js'
import { Name, Nullable, Timestamp, Uuid } from './common.js'
import { Priority } from './conversations.js'

/** Request and response shapes of /sla-policies and PATCH /conversations/:id/sla (API.md section 18, src/sla/). */

/** A target in minutes: 1..525600 (a year), or null (not measured). */
const Minutes = Nullable(Type.Integer({ minimum: 1, maximum: 525600 }))

const Hhmm = Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$' })
const Window = Type.Array(Hhmm, { minItems: 2, maxItems: 2 })
/**
 * The policy's hours: the office-hours format of section 14 with holidays (local dates, at most
 * 200); src/sla/business-time.ts checks what a schema cannot (the zone, each window's order).
 */
export const BusinessHoursSchema = Type.Object(
  {
    timezone: Type.String({ minLength: 1, maxLength: 64 }),
    days: Type.Object(Object.fromEntries(weekDays.map((d) => [d, Type.Optional(Type.Array(Window, { maxItems: 12 }))])), { additionalProperties: false }),
    holidays: Type.Array(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }), { maxItems: 200 }),
  },
  { additionalProperties: false },
)

const AppliesToFields = {
  channelIds: Type.Array(Uuid, { maxItems: 100, uniqueItems: true }),
  teamIds: Type.Array(Uuid, { maxItems: 100, uniqueItems: true }),
  priorities: Type.Array(Priority, { maxItems: 4, uniqueItems: true }),
}

export const SlaPolicy = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    firstResponseMinutes: Minutes,
    nextResponseMinutes: Minutes,
    resolutionMinutes: Minutes,
    businessHours: Nullable(BusinessHoursSchema),
    appliesTo: Type.Object(AppliesToFields),
    position: Type.Integer(),
    createdAt: Timestamp,
  },
  { $id: 'SlaPolicy' },
)
export type SlaPolicyView = Static<typeof SlaPolicy>
export const SlaPolicyList = Type.Object({ data: Type.Array(SlaPolicy) })

const Position = Type.Integer({ minimum: 0, maximum: 10000 })
const AppliesToInput = Type.Object(
  { channelIds: Type.Optional(AppliesToFields.channelIds), teamIds: Type.Optional(AppliesToFields.teamIds), priorities: Type.Optional(AppliesToFields.priorities) },
  { additionalProperties: false },
)

export const CreateSlaPolicyBody = Type.Object(
  {
    name: Name,
    firstResponseMinutes: Type.Optional(Minutes),
    nextResponseMinutes: Type.Optional(Minutes),
    resolutionMinutes: Type.Optional(Minutes),
    businessHours: Type.Optional(Nullable(BusinessHoursSchema)),
    appliesTo: Type.Optional(AppliesToInput),
    position: Type.Optional(Position),
  },
  { additionalProperties: false },
)
export type CreateSlaPolicyInput = Static<typeof CreateSlaPolicyBody>

/** A PATCH replaces the fields it names; appliesTo's lists each replace theirs (one left out stays). */
export const UpdateSlaPolicyBody = Type.Object(
  {
    name: Type.Optional(Name),
    firstResponseMinutes: Type.Optional(Minutes),
    nextResponseMinutes: Type.Optional(Minutes),
    resolutionMinutes: Type.Optional(Minutes),
    businessHours: Type.Optional(Nullable(BusinessHoursSchema)),
    appliesTo: Type.Optional(AppliesToInput),
    position: Type.Optional(Position),
  },
  { additionalProperties: false },
)
export type UpdateSlaPolicyInput = Static<typeof UpdateSlaPolicyBody>

/** PATCH /conversations/:id/sla: a policy of the workspace (else 400 INVALID_SLA_POLICY), or null for none. */
export const SetSlaBody = Type.Object({ policyId: Nullable(Type.String({ maxLength: 64 })) }, { additionalProperties: false })
