import { Type, type Static } from '@sinclair/typebox'
import { OfficeHours } from './channels.js'
import { Name, Nullable, Timestamp, Uuid } from './common.js'
import { Priority } from './conversations.js'

/** A local calendar date, "2026-12-25" (that it exists is checked by src/sla/business-time.ts). */
export const LocalDate = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' })

/**
 * An SLA policy's business hours (API.md section 18): the office-hours format of section 14
 * (`OfficeHours`: IANA zone, HH:MM windows per weekday, 24:00 as an end) plus up to 200 holidays,
 * local dates of the policy's zone. null in a policy means round the clock. What a schema cannot
 * say (a zone Intl knows, start before end, no overlap, real dates, one window at least) is
 * checked by `validateBusinessHours` in src/sla/business-time.ts.
 */
export const BusinessHoursSchema = Type.Object(
  {
    ...OfficeHours.properties,
    holidays: Type.Array(LocalDate, { maxItems: 200 }),
  },
  { additionalProperties: false },
)
export type BusinessHours = Static<typeof BusinessHoursSchema>

// Policies: request and response shapes of /sla-policies and PATCH /conversations/:id/sla (src/sla/policies.ts).

/** A target in minutes: 1..525600 (a year), or null (not measured). */
const Minutes = Nullable(Type.Integer({ minimum: 1, maximum: 525600 }))

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
