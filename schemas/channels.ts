import { Type, type Static, type TOptional } from '@sinclair/typebox'
import { Email, Literals, Name, Nullable, Timestamp, Uuid } from './common.js'
import { channelKinds, emailStates, expectedReplyTimes, weekDays, type WeekDay } from '../src/db/vocabulary.js'

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

// E-mail channels (API.md section 19)

/** A host name or IP literal: no scheme, path, spaces or control characters. */
const Host = Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._:\\[\\]-]+$' })
const Port = Type.Integer({ minimum: 1, maximum: 65535 })
const Username = Type.String({ minLength: 1, maxLength: 254 })
/** Write-only: stored encrypted (src/email/secrets.ts), answered as null. */
const Password = Type.String({ minLength: 1, maxLength: 1000 })
/** An IMAP mailbox name (default INBOX). */
const Mailbox = Type.String({ minLength: 1, maxLength: 200 })

const imapFields = { host: Host, port: Port, secure: Type.Boolean(), username: Username }
const smtpFields = { host: Host, port: Port, secure: Type.Boolean(), username: Username }

/** What channels.email stores: the settings without the passwords (those are encrypted columns). */
export const EmailStored = Type.Object({
  address: Type.String(),
  fromName: Nullable(Type.String()),
  imap: Type.Object({ ...imapFields, mailbox: Type.String() }),
  smtp: Type.Object(smtpFields),
})
export type EmailSettings = Static<typeof EmailStored>

export const EmailStatus = Type.Object({
  state: Literals(emailStates),
  error: Nullable(Type.String()),
  lastSyncAt: Nullable(Timestamp),
})

/** A channel's `email` as the API shows it: passwords are always null. */
export const EmailView = Type.Object({
  address: Type.String(),
  fromName: Nullable(Type.String()),
  imap: Type.Object({ ...imapFields, mailbox: Type.String(), password: Type.Null() }),
  smtp: Type.Object({ ...smtpFields, password: Type.Null() }),
  status: EmailStatus,
})
export type EmailChannelView = Static<typeof EmailView>

/** POST /channels `email` (kind "email"): everything but fromName and mailbox is required. */
export const EmailCreate = Type.Object(
  {
    address: Email,
    fromName: Type.Optional(Nullable(Name)),
    imap: Type.Object({ ...imapFields, password: Password, mailbox: Type.Optional(Mailbox) }, { additionalProperties: false }),
    smtp: Type.Object({ ...smtpFields, password: Password }, { additionalProperties: false }),
  },
  { additionalProperties: false },
)
export type EmailCreateInput = Static<typeof EmailCreate>

/** PATCH /channels/:id `email`: replaces the fields it names (in imap and smtp too), keeps the others; a missing password is kept. */
export const EmailPatch = Type.Object(
  {
    address: Type.Optional(Email),
    fromName: Type.Optional(Nullable(Name)),
    imap: Type.Optional(
      Type.Partial(Type.Object({ ...imapFields, password: Password, mailbox: Mailbox }, { additionalProperties: false }), {
        additionalProperties: false,
      }),
    ),
    smtp: Type.Optional(Type.Partial(Type.Object({ ...smtpFields, password: Password }, { additionalProperties: false }), { additionalProperties: false })),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type EmailPatchInput = Static<typeof EmailPatch>

/** POST /channels/:id/email/check: "ok" or the error each server gave. */
export const EmailCheckResult = Type.Object({ imap: Type.String(), smtp: Type.String() })

export const Channel = Type.Object({
  id: Uuid,
  name: Type.String(),
  kind: Literals(channelKinds),
  active: Type.Boolean(),
  allowedOrigins: Type.Array(Type.String()),
  requireChannelToken: Type.Boolean(),
  channelToken: Type.String(),
  /** Only for callers with channels:manage. */
  identitySecret: Type.Optional(Type.String()),
  widget: WidgetSettings,
  /** The team its new conversations belong to (API.md section 16). */
  defaultTeamId: Nullable(Uuid),
  /** An e-mail channel's settings and status (API.md section 19); absent on a web channel. */
  email: Type.Optional(EmailView),
  createdAt: Timestamp,
})
export type ChannelView = Static<typeof Channel>

export const ChannelList = Type.Object({ data: Type.Array(Channel) })

export const CreateChannelBody = Type.Object(
  {
    name: Name,
    /** Fixed at creation; "email" requires `email`. */
    kind: Type.Optional(Literals(channelKinds)),
    allowedOrigins: Type.Optional(AllowedOrigins),
    requireChannelToken: Type.Optional(Type.Boolean()),
    email: Type.Optional(EmailCreate),
  },
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
    /** An e-mail channel's settings: the fields named replace the stored ones (400 on a web channel). */
    email: Type.Optional(EmailPatch),
  },
  { additionalProperties: false, minProperties: 1 },
)
