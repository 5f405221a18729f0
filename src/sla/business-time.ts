import { Value } from '@sinclair/typebox/value'
import { IANAZone } from 'luxon'
import { BusinessHoursSchema, type BusinessHours as BusinessHoursOf } from '../../schemas/sla.js'
import { weekDays } from '../db/vocabulary.js'

/**
 * Parley's one business-time calculator (API.md section 18, docs/sla.md "Business time").
 *
 * An instant is business time when the wall clock of the policy's zone, at that instant, reads a
 * time inside a window of that local date's weekday, and that local date is not a holiday.
 * Business time between two instants is the real time elapsed at such instants. So a window that
 * spans the spring-forward gap is shorter in real time, and a window holding the repeated
 * fall-back hour counts that hour twice (once per real minute elapsed).
 *
 * How: real time is cut into segments of constant UTC offset (luxon tells the offsets; nothing
 * here knows a DST rule). Inside a segment, wall time = real time + offset, so the business time
 * of the segment is F(end + offset) - F(start + offset), where F is the cumulative business time
 * of the plain wall-clock calendar: whole weeks times the weekly total, plus the days before,
 * minus the holidays before, all arithmetic. A year of targets costs a few segments, not a walk
 * over days.
 */

/** The office-hours format of section 14 plus holidays: the schema's type, no twin. */
export type BusinessHours = BusinessHoursOf

/** Thrown by addBusinessTime for hours with no window at all: no due time ever comes. */
export class NoBusinessTimeError extends RangeError {
  constructor() {
    super('business hours have no opening window: no business time ever passes')
    this.name = 'NoBusinessTimeError'
  }
}

const MINUTE = 60_000
const SECOND = 1_000
const DAY = 86_400_000
const WEEK = 7 * DAY
/** Day number (days since 1970-01-01) of a Monday, 1970-01-05: weeks are counted from Mondays. */
const A_MONDAY = 4
/** The last millisecond a Date can hold. */
const MAX_TIME = 8.64e15

/** The hours, compiled: milliseconds from local midnight, weekday 0 = Monday. */
interface Plan {
  zone: IANAZone
  windows: Array<Array<[number, number]>>
  weekPrefix: number[]
  week: number
  /** Sorted distinct day numbers of the holidays, and the business time each removes, cumulated. */
  holidays: number[]
  holidayLoss: number[]
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))
const weekdayOf = (day: number) => (((day - A_MONDAY) % 7) + 7) % 7

/** Day number of a 'YYYY-MM-DD' calendar date, or null when the date does not exist. */
function dayNumber(date: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  if (!m) return null
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const at = new Date(0)
  at.setUTCFullYear(y, mo - 1, d) // not Date.UTC: it maps years 0..99 to 1900..1999
  if (at.getUTCFullYear() !== y || at.getUTCMonth() !== mo - 1 || at.getUTCDate() !== d) return null
  return Math.round(at.getTime() / DAY)
}

function compile(hours: BusinessHours): Plan {
  const zone = IANAZone.create(hours.timezone)
  if (!zone.isValid) throw new RangeError(`unknown time zone '${hours.timezone}'`)
  const days = hours.days as Partial<Record<string, Array<[string, string]>>>
  const windows = weekDays.map((d) =>
    (days[d] ?? []).map(([s, e]) => [minutesOf(s) * MINUTE, minutesOf(e) * MINUTE] as [number, number]).filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]),
  )
  const dayTotal = windows.map((ws) => ws.reduce((sum, [s, e]) => sum + e - s, 0))
  const weekPrefix = [0]
  for (const total of dayTotal) weekPrefix.push(weekPrefix[weekPrefix.length - 1] + total)
  const holidays = [...new Set(hours.holidays.map(dayNumber).filter((d): d is number => d !== null))].sort((a, b) => a - b)
  const holidayLoss = [0]
  for (const d of holidays) holidayLoss.push(holidayLoss[holidayLoss.length - 1] + dayTotal[weekdayOf(d)])
  return { zone, windows, weekPrefix, week: weekPrefix[7], holidays, holidayLoss }
}

/** Business time of weekday `k` in [local midnight, midnight + x). */
function withinDay(plan: Plan, k: number, x: number): number {
  let sum = 0
  for (const [s, e] of plan.windows[k]) {
    if (x <= s) break
    sum += Math.min(x, e) - s
  }
  return sum
}

/** How many holidays fall before day `d`. */
function holidaysBefore(plan: Plan, d: number): number {
  let lo = 0
  let hi = plan.holidays.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (plan.holidays[mid] < d) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * Cumulative business time of the wall-clock calendar up to wall time `w` (local time written as
 * if it were UTC milliseconds), from an arbitrary origin: only differences mean anything.
 */
function cumulative(plan: Plan, w: number): number {
  const d = Math.floor(w / DAY)
  const x = w - d * DAY
  const weeks = Math.floor((d - A_MONDAY) / 7)
  const k = d - A_MONDAY - weeks * 7
  const today = withinDay(plan, k, x)
  const i = holidaysBefore(plan, d)
  const holidayToday = i < plan.holidays.length && plan.holidays[i] === d
  return weeks * plan.week + plan.weekPrefix[k] + (holidayToday ? 0 : today) - plan.holidayLoss[i]
}

/** The smallest integer wall time w in [lo, hi] with cumulative(w) >= target (given cumulative(hi) >= target). */
function reach(plan: Plan, target: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2)
    if (cumulative(plan, mid) >= target) hi = mid
    else lo = mid + 1
  }
  return lo
}

// ---- Offset segments of a zone, from luxon, cached in chunks of 52 weeks ----

const CHUNK = 52 * WEEK
/**
 * Offsets are probed once a week and a change is bisected to the second. Assumed: a zone does not
 * change its offset twice within 7 days and come back to the same offset (true of the tz data
 * since 1970; real offset changes are weeks or months apart).
 */
const PROBE = WEEK
interface Chunk {
  /** at[0] is the chunk's start; offsets[i] (ms) holds on [at[i], at[i + 1]) and the last one up to the chunk's end. */
  at: number[]
  offsets: number[]
}
const chunks = new Map<string, Chunk>()
/**
 * A chunk is ~52 weeks and a few hundred bytes: 20,000 are ~20,000 zone-years, a few MB. The
 * worst valid policy (one business minute a week, a 525,600-minute target) spans 10,000 years.
 */
const MAX_CHUNKS = 20_000

/** Forgets the cached offsets (for measuring a cold start; nothing else needs it). */
export function clearOffsetCache(): void {
  chunks.clear()
}

const offsetAt = (zone: IANAZone, t: number) => Math.round(zone.offset(t) * MINUTE)

function chunkAt(zone: IANAZone, index: number): Chunk {
  const key = `${zone.name} ${index}`
  let chunk = chunks.get(key)
  if (chunk) return chunk
  const start = index * CHUNK
  chunk = { at: [start], offsets: [offsetAt(zone, start)] }
  let before = chunk.offsets[0]
  for (let p = start; p < start + CHUNK; p += PROBE) {
    const after = offsetAt(zone, p + PROBE)
    if (after === before) continue
    // Bisect to the second: lo keeps the old offset, hi has the new one.
    let lo = p
    let hi = p + PROBE
    while (hi - lo > SECOND) {
      const mid = lo + Math.floor((hi - lo) / 2 / SECOND) * SECOND
      if (offsetAt(zone, mid) === before) lo = mid
      else hi = mid
    }
    if (hi < start + CHUNK) {
      chunk.at.push(hi)
      chunk.offsets.push(offsetAt(zone, hi))
    }
    before = after
  }
  if (chunks.size >= MAX_CHUNKS) chunks.clear()
  chunks.set(key, chunk)
  return chunk
}

/** The constant-offset segment holding real time t: [t's segment start, end), offset in ms. */
function segmentAt(zone: IANAZone, t: number): { end: number; offset: number } {
  const index = Math.floor(t / CHUNK)
  const chunk = chunkAt(zone, index)
  let i = chunk.at.length - 1
  while (chunk.at[i] > t) i--
  return { end: i + 1 < chunk.at.length ? chunk.at[i + 1] : (index + 1) * CHUNK, offset: chunk.offsets[i] }
}

function timeOf(d: Date, name: string): number {
  const t = d instanceof Date ? d.getTime() : Number.NaN
  if (!Number.isFinite(t)) throw new RangeError(`${name} is not a valid date`)
  return t
}

/**
 * The instant at which `ms` of business time has passed since `start`: the earliest t with
 * businessTimeBetween(start, t) === ms (so a target reached at a window's end is due at that
 * end, not at the next opening). `ms` 0 gives `start` itself. null hours: round the clock.
 * Throws NoBusinessTimeError for hours without any window (validateBusinessHours refuses them),
 * RangeError for a negative or fractional `ms` or a result past the last Date.
 */
export function addBusinessTime(start: Date, ms: number, hours: BusinessHours | null): Date {
  const t0 = timeOf(start, 'start')
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError('ms must be a non-negative integer')
  if (!hours) return new Date(t0 + ms)
  const plan = compile(hours)
  if (plan.week === 0) throw new NoBusinessTimeError()
  if (ms === 0) return new Date(t0)
  let t = t0
  let remaining = ms
  for (;;) {
    if (t >= MAX_TIME) throw new RangeError('the business time ends past the last representable date')
    const { end, offset } = segmentAt(plan.zone, t)
    const from = cumulative(plan, t + offset)
    const available = cumulative(plan, end + offset) - from
    if (available >= remaining) return new Date(reach(plan, from + remaining, t + offset, end + offset) - offset)
    remaining -= available
    t = end
  }
}

/** Milliseconds of business time in [from, to); 0 when to <= from. null hours: round the clock. */
export function businessTimeBetween(from: Date, to: Date, hours: BusinessHours | null): number {
  const a = timeOf(from, 'from')
  const b = timeOf(to, 'to')
  if (b <= a) return 0
  if (!hours) return b - a
  const plan = compile(hours)
  if (plan.week === 0) return 0
  let sum = 0
  for (let t = a; t < b; ) {
    const { end, offset } = segmentAt(plan.zone, t)
    const stop = Math.min(end, b)
    sum += cumulative(plan, stop + offset) - cumulative(plan, t + offset)
    t = stop
  }
  return sum
}

/**
 * null when `h` is valid business hours, else a short reason: the schema (shape, "HH:MM", at most
 * 12 windows a day and 200 holidays), then a time zone luxon (Intl) knows, each window starting
 * before it ends, no two windows of a day overlapping (touching is fine), holidays that are real
 * dates, and at least one window in the week.
 */
export function validateBusinessHours(h: unknown): string | null {
  if (!Value.Check(BusinessHoursSchema, h)) {
    const first = Value.Errors(BusinessHoursSchema, h).First()
    const path = (first?.path ?? '').replace(/^\//, '').replaceAll('/', '.')
    return path ? `field '${path}' ${first?.message.toLowerCase()}` : `business hours ${first?.message.toLowerCase() ?? 'are invalid'}`
  }
  if (!IANAZone.isValidZone(h.timezone)) return `unknown time zone '${h.timezone}'`
  let windows = 0
  for (const day of weekDays) {
    const list = (h.days[day] ?? []).map(([s, e], i) => ({ s: minutesOf(s), e: minutesOf(e), i }))
    for (const w of list) if (w.e <= w.s) return `field 'days.${day}.${w.i}' must start before it ends`
    list.sort((x, y) => x.s - y.s)
    for (let j = 1; j < list.length; j++) {
      if (list[j].s < list[j - 1].e) return `field 'days.${day}.${list[j].i}' overlaps another window of the day`
    }
    windows += list.length
  }
  if (windows === 0) return 'business hours need at least one window'
  const bad = h.holidays.findIndex((d) => dayNumber(d) === null)
  if (bad >= 0) return `field 'holidays.${bad}' is not a date`
  return null
}
