import { Type, type Static } from '@sinclair/typebox'
import { OfficeHours } from './channels.js'

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
