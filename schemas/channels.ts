import { Type, type Static, type TOptional } from '@sinclair/typebox'
import { Literals, Name, Nullable, Timestamp, Uuid } from './common.js'
import { expectedReplyTimes, weekDays, type WeekDay } from '../src/db/schema.js'

/** A browser origin: scheme, host and optional port, nothing after it ("https://shop.example.com"). */
export const Origin = Type.String({ pattern: '^https?://[^/?#\\s]+$', maxLength: 255 })
export const AllowedOrigins = Type.Array(Origin, { maxItems: 100 })

/** HH:MM, 00:00..23:59, and 24:00 (meant as an end). */
const Hhmm = Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$' })
/** [start, end], start before end (checked by src/support/widget-settings.ts, and for SLA hours by src/sla/business-time.ts). */
const Window = Type.Array(Hhmm, { minItems: 2, maxItems: 2 })
const DayWindows = Type.Array(Window, { maxItems: 12 })
/** One optional list of windows per weekday (keys typed, so `days.mon` is known to TypeScript). */
const WeekWindows = Type.Object(
  Object.fromEntries(weekDays.map((d) => [d, Type.Optional(DayWindows)])) as Record<WeekDay, TOptional<typeof DayWindows>>,
  { additionalProperties: false },
)

export const OfficeHours = Type.Object(
  {
    /** IANA time zone ("Europe/Paris"), checked through Intl; stored in its canonical spelling. */
    timezone: Type.String({ minLength: 1, maxLength: 64 }),
    /** A day left out is closed. */
    days: WeekWindows,
  },
  { additionalProperties: false },
)

const widgetFields = {
  color: Type.String({ pattern: '^#[0-9a-fA-F]{6}$' }),
  greeting: Type.String({ maxLength: 500 }),
  awayMessage: Type.String({ maxLength: 500 }),
  expectedReplyTime: Literals(expectedReplyTimes),
  officeHours: Nullable(OfficeHours),
  csatEnabled: Type.Boolean(),
}

/** A channel's widget settings (API.md section 14), defaults filled in. */
export const WidgetSettings = Type.Object(widgetFields)
export type WidgetSettingsView = Static<typeof WidgetSettings>

/** PATCH /channels/:id `widget`: replaces the fields it names, keeps the others. */
export const WidgetPatch = Type.Partial(Type.Object(widgetFields, { additionalProperties: false }))
export type WidgetPatchInput = Static<typeof WidgetPatch>

export const Channel = Type.Object({
  id: Uuid,
  name: Type.String(),
  kind: Type.Literal('web'),
  active: Type.Boolean(),
  allowedOrigins: Type.Array(Type.String()),
  requireChannelToken: Type.Boolean(),
  channelToken: Type.String(),
  /** Only for callers with channels:manage. */
  identitySecret: Type.Optional(Type.String()),
  widget: WidgetSettings,
  /** The team its new conversations belong to (API.md section 16). */
  defaultTeamId: Nullable(Uuid),
  createdAt: Timestamp,
})
export type ChannelView = Static<typeof Channel>

export const ChannelList = Type.Object({ data: Type.Array(Channel) })

export const CreateChannelBody = Type.Object(
  { name: Name, allowedOrigins: Type.Optional(AllowedOrigins), requireChannelToken: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
)

export const UpdateChannelBody = Type.Object(
  {
    name: Type.Optional(Name),
    allowedOrigins: Type.Optional(AllowedOrigins),
    requireChannelToken: Type.Optional(Type.Boolean()),
    active: Type.Optional(Type.Boolean()),
    widget: Type.Optional(WidgetPatch),
    /** A team of the workspace, or null (else 400 INVALID_TEAM): new conversations of the channel belong to it. */
    defaultTeamId: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  },
  { additionalProperties: false, minProperties: 1 },
)
