import { createHash } from 'node:crypto'
import type { WidgetPatchInput, WidgetSettingsView } from '../../schemas/channels.js'
import { checkChannelToken } from '../auth/channel-token.js'
import type { Ctx } from '../context.js'
import type { channels } from '../db/schema.js'
import { weekDays, type WeekDay } from '../db/vocabulary.js'
import { badRequest, channelNotFound } from '../errors.js'
import { isUuid } from '../uuid.js'

/**
 * A channel's widget settings (API.md section 14). channels.widget stores only the fields a PATCH
 * named; the defaults are filled in on read, so a changed default reaches every channel that
 * never set the field.
 */
export const WIDGET_DEFAULTS: WidgetSettingsView = {
  color: '#1f6feb',
  greeting: '',
  awayMessage: '',
  expectedReplyTime: 'minutes',
  officeHours: null,
  csatEnabled: false,
}

export function widgetSettings(stored: unknown): WidgetSettingsView {
  return { ...WIDGET_DEFAULTS, ...(stored && typeof stored === 'object' ? (stored as Partial<WidgetSettingsView>) : {}) }
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))

/** The canonical IANA name of `zone`, or null when Intl does not know it. */
export function canonicalTimeZone(zone: string): string | null {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    return null
  }
}

/**
 * What the schema cannot say about a widget PATCH: the time zone is one Intl knows (stored in its
 * canonical spelling), each window starts before it ends. 400 naming the field otherwise.
 */
export function checkWidgetPatch(patch: WidgetPatchInput): WidgetPatchInput {
  const hours = patch.officeHours
  if (!hours) return patch
  const timezone = canonicalTimeZone(hours.timezone)
  if (!timezone) throw badRequest(`field 'widget.officeHours.timezone' is not an IANA time zone`)
  const days = hours.days as Partial<Record<WeekDay, string[][]>>
  for (const day of weekDays) {
    days[day]?.forEach(([start, end], i) => {
      if (minutesOf(start) >= minutesOf(end)) {
        throw badRequest(`field 'widget.officeHours.days.${day}.${i}' must start before it ends`)
      }
    })
  }
  return { ...patch, officeHours: { timezone, days } }
}

/** One formatter per zone: building an Intl.DateTimeFormat costs far more than using one. */
const formatters = new Map<string, Intl.DateTimeFormat>()
function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    if (formatters.size > 1000) formatters.clear()
    formatters.set(timeZone, f)
  }
  return f
}

/**
 * Whether `now` falls in a window of its weekday in the office hours' zone. Intl does the
 * conversion, so daylight-saving changes are honoured: 09:00 Paris is 08:00 UTC in winter and
 * 07:00 UTC in summer. No office hours: always within.
 */
export function withinOfficeHours(hours: WidgetSettingsView['officeHours'], now: Date = new Date()): boolean {
  if (!hours) return true
  const parts = formatterFor(hours.timezone).formatToParts(now)
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? ''
  const day = get('weekday').toLowerCase() as WeekDay
  const minute = Number(get('hour')) * 60 + Number(get('minute'))
  const windows = (hours.days as Partial<Record<WeekDay, string[][]>>)[day] ?? []
  return windows.some(([start, end]) => minutesOf(start) <= minute && minute < minutesOf(end))
}

export interface WidgetConfig {
  body: {
    channelId: string
    name: string
    color: string
    greeting: string
    awayMessage: string
    expectedReplyTime: WidgetSettingsView['expectedReplyTime']
    online: boolean
    withinOfficeHours: boolean
    csatEnabled: boolean
  }
  /** A strong validator of the body: equal bodies, equal tags, on every replica. */
  etag: string
}

/** Presence unreadable: the widget still opens (and offers the offline message), logged. */
async function someoneOnline(ctx: Ctx, workspaceId: string): Promise<boolean> {
  try {
    return await ctx.presence.anyMemberOnline(workspaceId)
  } catch (err) {
    ctx.log.warn({ err: { message: (err as Error).message } }, 'presence unavailable; widget reports nobody online')
    return false
  }
}

interface Facts {
  channel: WidgetChannel | undefined
  online: boolean
}

/**
 * The channel row and the workspace's `online`, kept WIDGET_CACHE_MS (default 1 s) per process
 * and channel: the widget asks on every page load of every customer site, and a second of
 * staleness is nothing beside the 30 s browsers may keep the answer (Cache-Control). One cache
 * per pool (per app), bounded; the office hours and the channel token are judged per request.
 */
const caches = new WeakMap<object, Map<string, { at: number; facts: Promise<Facts> }>>()
const CACHE_MAX = 10_000

function widgetFacts(ctx: Ctx, id: string): Promise<Facts> {
  const ttl = ctx.config.WIDGET_CACHE_MS
  if (ttl === 0) return readFacts(ctx, id)
  let cache = caches.get(ctx.sql)
  if (!cache) caches.set(ctx.sql, (cache = new Map()))
  const now = Date.now()
  const hit = cache.get(id)
  if (hit && now - hit.at < ttl) return hit.facts
  if (cache.size >= CACHE_MAX) cache.clear()
  // The promise is shared: concurrent misses for one channel make one read.
  const facts = readFacts(ctx, id)
  cache.set(id, { at: now, facts })
  facts.catch(() => cache.delete(id))
  return facts
}

async function readFacts(ctx: Ctx, id: string): Promise<Facts> {
  const [channel] = await ctx.sql<WidgetChannel[]>`
    SELECT workspace_id AS "workspaceId", name, active, require_channel_token AS "requireChannelToken",
           channel_token AS "channelToken", widget
    FROM channels WHERE id = ${id}`
  return { channel, online: channel?.active ? await someoneOnline(ctx, channel.workspaceId) : false }
}

type WidgetChannel = Pick<typeof channels.$inferSelect, 'workspaceId' | 'name' | 'active' | 'requireChannelToken' | 'channelToken' | 'widget'>

/**
 * GET /support/widget/:channelId: what the widget needs before it opens. One primary-key read
 * and one small Redis hash (the workspace's announced member statuses), at most once per
 * WIDGET_CACHE_MS per channel and process; no secrets, no member data. `online`: some member is
 * `online` (not `away`). Unknown or inactive: 404; a channel that requires its token: 401
 * without the right one.
 */
export async function widgetConfig(ctx: Ctx, channelId: string, channelToken: string | undefined): Promise<WidgetConfig> {
  if (!isUuid(channelId)) throw channelNotFound()
  const id = channelId.toLowerCase()
  const { channel, online } = await widgetFacts(ctx, id)
  if (!channel || !channel.active) throw channelNotFound()
  checkChannelToken(channel, channelToken)
  const w = widgetSettings(channel.widget)
  const body = {
    channelId: id,
    name: channel.name,
    color: w.color,
    greeting: w.greeting,
    awayMessage: w.awayMessage,
    expectedReplyTime: w.expectedReplyTime,
    online,
    withinOfficeHours: withinOfficeHours(w.officeHours),
    csatEnabled: w.csatEnabled,
  }
  const etag = `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`
  return { body, etag }
}

/** If-None-Match names `etag` (or `*`): the client's copy is current. */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '')
    return tag === '*' || tag === etag
  })
}
