import fc from 'fast-check'
import { DateTime } from 'luxon'
import t from 'tap'
import {
  addBusinessTime,
  businessTimeBetween,
  clearOffsetCache,
  NoBusinessTimeError,
  validateBusinessHours,
  type BusinessHours,
} from '../../src/sla/business-time.js'

const MIN = 60_000
type Day = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun'
const WEEKDAYS: Day[] = ['mon', 'tue', 'wed', 'thu', 'fri']

// The agreed interface: hours written as pairs are accepted as they are (section 14's type says string[][]).
type Declared = { timezone: string; days: Partial<Record<Day, Array<[string, string]>>>; holidays: string[] }
const fromDeclared = (h: Declared): BusinessHours => h
void fromDeclared

function hours(timezone: string, windows: Array<[string, string]>, days: Day[] = WEEKDAYS, holidays: string[] = []): BusinessHours {
  return { timezone, days: Object.fromEntries(days.map((d) => [d, windows])), holidays }
}
const nineToFive = (tz: string, holidays: string[] = []) => hours(tz, [['09:00', '17:00']], WEEKDAYS, holidays)
const splitShift = hours('UTC', [['09:00', '12:00'], ['13:00', '17:00']])

interface Case {
  name: string
  hours: BusinessHours | null
  start: string
  minutes: number
  due: string
}

// Calendar: 2026-01-09 is a Friday. DST 2026: EU Mar 29 and Oct 25 (01:00Z), US Mar 8 (07:00Z)
// and Nov 1 (06:00Z), Lord Howe Apr 5 (02:00 +11 -> 01:30 +10:30) and Oct 4 (02:00 +10:30 -> 02:30 +11).
const cases: Case[] = [
  { name: 'the contract: 60 min at 16:30 Friday, Mon-Fri 09-17 -> 09:30 Monday', hours: nineToFive('UTC'), start: '2026-01-09T16:30:00Z', minutes: 60, due: '2026-01-12T09:30:00Z' },
  { name: 'same in Berlin (winter, +01:00)', hours: nineToFive('Europe/Berlin'), start: '2026-01-09T16:30:00+01:00', minutes: 60, due: '2026-01-12T09:30:00+01:00' },
  { name: 'target reached exactly at a window end: due at that end', hours: nineToFive('UTC'), start: '2026-01-09T16:00:00Z', minutes: 60, due: '2026-01-09T17:00:00Z' },
  { name: 'start inside a window', hours: nineToFive('UTC'), start: '2026-01-05T10:00:00Z', minutes: 30, due: '2026-01-05T10:30:00Z' },
  { name: 'start before a window', hours: nineToFive('UTC'), start: '2026-01-05T07:00:00Z', minutes: 30, due: '2026-01-05T09:30:00Z' },
  { name: 'start after a window', hours: nineToFive('UTC'), start: '2026-01-05T18:00:00Z', minutes: 30, due: '2026-01-06T09:30:00Z' },
  { name: 'start on a weekend', hours: nineToFive('UTC'), start: '2026-01-10T12:00:00Z', minutes: 60, due: '2026-01-12T10:00:00Z' },
  { name: 'seconds of the start are kept', hours: nineToFive('UTC'), start: '2026-01-05T10:00:07.250Z', minutes: 1, due: '2026-01-05T10:01:07.250Z' },
  { name: 'split shift: 30 before lunch, 30 after', hours: splitShift, start: '2026-01-05T11:30:00Z', minutes: 60, due: '2026-01-05T13:30:00Z' },
  { name: 'split shift: start during lunch', hours: splitShift, start: '2026-01-05T12:15:00Z', minutes: 90, due: '2026-01-05T14:30:00Z' },
  { name: 'split shift: a full day is 7h', hours: splitShift, start: '2026-01-05T09:00:00Z', minutes: 7 * 60, due: '2026-01-05T17:00:00Z' },
  { name: 'a holiday on Monday: Friday 16:30 + 60 -> Tuesday 09:30', hours: nineToFive('UTC', ['2026-01-12']), start: '2026-01-09T16:30:00Z', minutes: 60, due: '2026-01-13T09:30:00Z' },
  { name: 'start on a holiday', hours: nineToFive('UTC', ['2026-01-12']), start: '2026-01-12T10:00:00Z', minutes: 30, due: '2026-01-13T09:30:00Z' },
  { name: 'holidays are local dates (Tokyo Monday holiday, Sunday in UTC)', hours: nineToFive('Asia/Tokyo', ['2026-01-12']), start: '2026-01-09T16:30:00+09:00', minutes: 60, due: '2026-01-13T09:30:00+09:00' },
  { name: '24:00 as an end', hours: hours('UTC', [['22:00', '24:00']]), start: '2026-01-05T23:30:00Z', minutes: 60, due: '2026-01-06T22:30:00Z' },
  { name: 'overnight shift as two windows on two days', hours: { timezone: 'UTC', days: { mon: [['22:00', '24:00']], tue: [['00:00', '06:00']] }, holidays: [] }, start: '2026-01-05T23:00:00Z', minutes: 120, due: '2026-01-06T01:00:00Z' },
  { name: 'round the clock (null)', hours: null, start: '2026-01-09T16:30:00Z', minutes: 60, due: '2026-01-09T17:30:00Z' },
  { name: 'round the clock, a year', hours: null, start: '2026-01-01T00:00:00Z', minutes: 525_600, due: '2027-01-01T00:00:00Z' },
  // Europe/Berlin across both changes.
  { name: 'Berlin: Friday before spring-forward -> Monday 09:30 CEST', hours: nineToFive('Europe/Berlin'), start: '2026-03-27T16:30:00+01:00', minutes: 60, due: '2026-03-30T09:30:00+02:00' },
  { name: 'Berlin: window 01-04 over the spring gap is 2h of real time', hours: hours('Europe/Berlin', [['01:00', '04:00']], ['sun']), start: '2026-03-29T01:00:00+01:00', minutes: 120, due: '2026-03-29T04:00:00+02:00' },
  { name: 'Berlin: one minute more spills to the next Sunday', hours: hours('Europe/Berlin', [['01:00', '04:00']], ['sun']), start: '2026-03-29T01:00:00+01:00', minutes: 121, due: '2026-04-05T01:01:00+02:00' },
  { name: 'Berlin: Friday before fall-back -> Monday 09:30 CET', hours: nineToFive('Europe/Berlin'), start: '2026-10-23T16:30:00+02:00', minutes: 60, due: '2026-10-26T09:30:00+01:00' },
  { name: 'Berlin: window 00-04 holding the repeated hour is 5h of real time', hours: hours('Europe/Berlin', [['00:00', '04:00']], ['sun']), start: '2026-10-25T00:00:00+02:00', minutes: 300, due: '2026-10-25T04:00:00+01:00' },
  { name: 'Berlin: inside the repeated hour, first pass -> second pass', hours: hours('Europe/Berlin', [['02:00', '03:00']], ['sun']), start: '2026-10-25T02:30:00+02:00', minutes: 60, due: '2026-10-25T02:30:00+01:00' },
  // America/New_York across both changes.
  { name: 'New York: Friday before spring-forward -> Monday 09:30 EDT', hours: nineToFive('America/New_York'), start: '2026-03-06T16:30:00-05:00', minutes: 60, due: '2026-03-09T09:30:00-04:00' },
  { name: 'New York: window 01-03 over the gap is 1h', hours: hours('America/New_York', [['01:00', '03:00']], ['sun']), start: '2026-03-08T01:00:00-05:00', minutes: 60, due: '2026-03-08T03:00:00-04:00' },
  { name: 'New York: window wholly inside the gap gives nothing that day', hours: hours('America/New_York', [['02:00', '02:30']], ['sun']), start: '2026-03-08T00:00:00-05:00', minutes: 10, due: '2026-03-15T02:10:00-04:00' },
  { name: 'New York: Friday before fall-back -> Monday 09:30 EST', hours: nineToFive('America/New_York'), start: '2026-10-30T16:30:00-04:00', minutes: 60, due: '2026-11-02T09:30:00-05:00' },
  { name: 'New York: window 01-02 on fall-back day is 2h', hours: hours('America/New_York', [['01:00', '02:00']], ['sun']), start: '2026-11-01T01:00:00-04:00', minutes: 120, due: '2026-11-01T02:00:00-05:00' },
  // Half-hour zones.
  { name: 'Asia/Kolkata (+05:30)', hours: nineToFive('Asia/Kolkata'), start: '2026-01-09T16:30:00+05:30', minutes: 60, due: '2026-01-12T09:30:00+05:30' },
  { name: 'Lord Howe: 30-min fall-back, window 01-03 is 2.5h', hours: hours('Australia/Lord_Howe', [['01:00', '03:00']], ['sun']), start: '2026-04-05T01:00:00+11:00', minutes: 150, due: '2026-04-05T03:00:00+10:30' },
  { name: 'Lord Howe: 30-min spring-forward, window 01-03 is 1.5h', hours: hours('Australia/Lord_Howe', [['01:00', '03:00']], ['sun']), start: '2026-10-04T01:00:00+10:30', minutes: 90, due: '2026-10-04T03:00:00+11:00' },
  // Long targets: 525,600 business minutes = 1095 days of 8h = 219 weeks of Mon-Fri.
  { name: '525600 min, Berlin 8h x 5: 219 weeks, ends Friday 17:00', hours: nineToFive('Europe/Berlin'), start: '2026-01-05T09:00:00+01:00', minutes: 525_600, due: '2030-03-15T17:00:00+01:00' },
  { name: '525600 min with two weekday holidays and a Saturday one: two days later', hours: nineToFive('UTC', ['2026-12-25', '2027-01-01', '2026-01-10']), start: '2026-01-05T09:00:00Z', minutes: 525_600, due: '2030-03-19T17:00:00Z' },
]

t.test('table: addBusinessTime and businessTimeBetween agree with hand-computed due times', async (t) => {
  for (const c of cases) {
    const start = new Date(c.start)
    const due = addBusinessTime(start, c.minutes * MIN, c.hours)
    t.equal(due.toISOString(), new Date(c.due).toISOString(), c.name)
    t.equal(businessTimeBetween(start, new Date(c.due), c.hours), c.minutes * MIN, `${c.name} (between)`)
  }
})

t.test('businessTimeBetween: edges', async (t) => {
  const h = nineToFive('UTC')
  const d = (s: string) => new Date(s)
  t.equal(businessTimeBetween(d('2026-01-05T12:00:00Z'), d('2026-01-05T12:00:00Z'), h), 0, 'empty range')
  t.equal(businessTimeBetween(d('2026-01-05T12:00:00Z'), d('2026-01-05T10:00:00Z'), h), 0, 'to before from')
  t.equal(businessTimeBetween(d('2026-01-05T12:00:00Z'), d('2026-01-05T10:00:00Z'), null), 0, 'to before from, round the clock')
  t.equal(businessTimeBetween(d('2026-01-05T00:00:00Z'), d('2026-01-12T00:00:00Z'), h), 40 * 60 * MIN, 'a week is 40h')
  t.equal(businessTimeBetween(d('2026-01-10T00:00:00Z'), d('2026-01-12T00:00:00Z'), h), 0, 'a weekend is nothing')
  t.equal(businessTimeBetween(d('2026-01-05T16:59:00Z'), d('2026-01-05T17:00:00Z'), h), MIN, 'the last minute counts')
  t.equal(businessTimeBetween(d('2026-01-05T17:00:00Z'), d('2026-01-05T17:01:00Z'), h), 0, 'the end is excluded')
  t.equal(businessTimeBetween(d('2026-03-29T00:00:00+01:00'), d('2026-03-30T00:00:00+02:00'), hours('Europe/Berlin', [['00:00', '24:00']], ['sun'])), 23 * 60 * MIN, 'spring-forward Sunday is 23h')
  t.equal(businessTimeBetween(d('2026-10-25T00:00:00+02:00'), d('2026-10-26T00:00:00+01:00'), hours('Europe/Berlin', [['00:00', '24:00']], ['sun'])), 25 * 60 * MIN, 'fall-back Sunday is 25h')
  t.equal(addBusinessTime(d('2026-01-10T12:00:00Z'), 0, h).toISOString(), '2026-01-10T12:00:00.000Z', 'adding 0 is the start, even outside hours')
  t.throws(() => addBusinessTime(d('2026-01-05T12:00:00Z'), -1, h), RangeError, 'negative')
  t.throws(() => addBusinessTime(d('2026-01-05T12:00:00Z'), 1.5, h), RangeError, 'fractional')
  t.throws(() => addBusinessTime(new Date('nope'), 1, h), RangeError, 'invalid date')
})

t.test('hours without any window: addBusinessTime throws NoBusinessTimeError, between is 0', async (t) => {
  const closed: BusinessHours = { timezone: 'UTC', days: {}, holidays: [] }
  const start = new Date('2026-01-05T12:00:00Z')
  let caught: unknown
  try {
    addBusinessTime(start, 60 * MIN, closed)
  } catch (err) {
    caught = err
  }
  t.ok(caught instanceof NoBusinessTimeError, 'NoBusinessTimeError')
  t.ok(caught instanceof RangeError, 'a RangeError too')
  t.equal(businessTimeBetween(start, new Date('2027-01-05T12:00:00Z'), closed), 0)
  t.equal(validateBusinessHours(closed), 'business hours need at least one window', 'and validation refuses them')
})

t.test('525,600 minutes is fast (cold and warm)', async (t) => {
  const h = nineToFive('Europe/Berlin')
  const start = new Date('2026-01-05T08:00:00Z')
  clearOffsetCache()
  let t0 = performance.now()
  addBusinessTime(start, 525_600 * MIN, h)
  const cold = performance.now() - t0
  const warm: number[] = []
  for (let i = 0; i < 20; i++) {
    t0 = performance.now()
    addBusinessTime(new Date(start.getTime() + i * 3_600_000), 525_600 * MIN, h)
    warm.push(performance.now() - t0)
  }
  warm.sort((a, b) => a - b)
  t.comment(`525600 min, Berlin Mon-Fri 8h: cold ${cold.toFixed(2)} ms, warm median ${warm[10].toFixed(3)} ms (shared machine)`)
  t.ok(cold < 50, `cold ${cold.toFixed(2)} ms under 50 ms (target 10; slack for a shared machine)`)
  t.ok(warm[10] < 10, `warm median ${warm[10].toFixed(3)} ms under 10 ms`)
})

t.test('validateBusinessHours', async (t) => {
  const ok = nineToFive('Europe/Berlin', ['2026-12-25'])
  const cases: Array<[unknown, RegExp | null, string]> = [
    [ok, null, 'valid'],
    [hours('UTC', [['00:00', '24:00']]), null, '24:00 as an end'],
    [hours('Asia/Kolkata', [['09:00', '12:00'], ['12:00', '17:00']]), null, 'touching windows'],
    [hours('UTC', [['13:00', '17:00'], ['09:00', '12:00']]), null, 'windows in any order'],
    [{ ...ok, holidays: Array.from({ length: 200 }, (_, i) => DateTime.fromISO('2026-01-01').plus({ days: i }).toISODate()) }, null, '200 holidays'],
    [null, /business hours/, 'null'],
    ['Mon-Fri', /business hours/, 'a string'],
    [{ ...ok, timezone: 'Mars/Olympus' }, /unknown time zone/, 'unknown zone'],
    [{ ...ok, timezone: '' }, /timezone/, 'empty zone'],
    [{ ...ok, days: { mon: [['9:00', '17:00']] } }, /days\.mon\.0\.0/, 'bad HH:MM'],
    [{ ...ok, days: { mon: [['09:00', '24:30']] } }, /days\.mon\.0\.1/, 'past 24:00'],
    [{ ...ok, days: { mon: [['09:00']] } }, /days\.mon\.0/, 'a window of one time'],
    [{ ...ok, days: { mon: [['17:00', '09:00']] } }, /days\.mon\.0' must start before it ends/, 'end before start'],
    [{ ...ok, days: { mon: [['09:00', '09:00']] } }, /must start before it ends/, 'empty window'],
    [{ ...ok, days: { mon: [['24:00', '24:00']] } }, /must start before it ends/, '24:00 as a start'],
    [{ ...ok, days: { tue: [['09:00', '12:00'], ['11:00', '17:00']] } }, /days\.tue\.1' overlaps/, 'overlapping windows'],
    [{ ...ok, days: { tue: [['09:00', '17:00'], ['10:00', '11:00']] } }, /days\.tue\.1' overlaps/, 'a window inside another'],
    [{ ...ok, days: { someday: [['09:00', '17:00']] } }, /someday/, 'unknown day'],
    [{ ...ok, days: {} }, /at least one window/, 'no window at all'],
    [{ ...ok, holidays: Array.from({ length: 201 }, () => '2026-12-25') }, /holidays/, '201 holidays'],
    [{ ...ok, holidays: ['2026-02-30'] }, /holidays\.0' is not a date/, 'a date that does not exist'],
    [{ ...ok, holidays: ['2026-12-25', '25/12/2026'] }, /holidays\.1/, 'a date in another format'],
    [{ timezone: 'UTC', days: { mon: [['09:00', '17:00']] } }, /holidays/, 'holidays missing'],
    [{ ...ok, extra: 1 }, /extra|business hours/, 'unknown field'],
  ]
  for (const [input, expected, name] of cases) {
    const reason = validateBusinessHours(input)
    if (expected === null) t.equal(reason, null, name)
    else t.match(reason ?? '', expected, `${name}: ${reason}`)
  }
})

// ---- Properties ----

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'America/Havana', 'America/Sao_Paulo', 'Pacific/Chatham']
const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`
/** 0..3 windows a day from sorted distinct minute marks; touching windows happen when marks are shared. */
const dayWindows = fc
  .uniqueArray(fc.integer({ min: 0, max: 1440 }), { maxLength: 6 })
  .map((marks) => {
    const s = [...marks].sort((a, b) => a - b)
    const out: Array<[string, string]> = []
    for (let i = 0; i + 1 < s.length; i += 2) out.push([hhmm(s[i]), hhmm(s[i + 1])])
    return out
  })
const DAYS: Day[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
const businessHours: fc.Arbitrary<BusinessHours> = fc
  .record({
    timezone: fc.constantFrom(...ZONES),
    windows: fc.array(dayWindows, { minLength: 7, maxLength: 7 }),
    holidays: fc.array(fc.integer({ min: 0, max: 4 * 366 }).map((d) => DateTime.fromISO('2025-01-01').plus({ days: d }).toISODate() as string), { maxLength: 30 }),
  })
  .filter((r) => r.windows.some((w) => w.length > 0))
  .map((r) => ({ timezone: r.timezone, days: Object.fromEntries(DAYS.map((d, i) => [d, r.windows[i]]).filter(([, w]) => w.length > 0)), holidays: r.holidays }))
const instant = fc.integer({ min: Date.UTC(2025, 0, 1), max: Date.UTC(2028, 0, 1) }).map((ms) => new Date(ms))
const amount = fc.oneof(fc.integer({ min: 0, max: 525_600 }).map((m) => m * MIN), fc.integer({ min: 0, max: 3 * 86_400_000 }))

t.test('property: generated hours are valid', async (t) => {
  fc.assert(fc.property(businessHours, (h) => validateBusinessHours(h) === null), { numRuns: 300 })
  t.pass()
})

t.test('property: businessTimeBetween(s, addBusinessTime(s, N)) === N', async (t) => {
  fc.assert(fc.property(businessHours, instant, amount, (h, s, n) => businessTimeBetween(s, addBusinessTime(s, n, h), h) === n), { numRuns: 300 })
  t.pass()
})

t.test('property: monotonic', async (t) => {
  fc.assert(
    fc.property(businessHours, instant, amount, amount, (h, s, a, b) => {
      const [lo, hi] = a <= b ? [a, b] : [b, a]
      const addOk = addBusinessTime(s, lo, h).getTime() <= addBusinessTime(s, hi, h).getTime()
      const t1 = new Date(s.getTime() + lo)
      const t2 = new Date(s.getTime() + hi)
      return addOk && businessTimeBetween(s, t1, h) <= businessTimeBetween(s, t2, h)
    }),
    { numRuns: 200 },
  )
  t.pass()
})

t.test('property: additivity add(add(s, a), b) === add(s, a + b), and between splits', async (t) => {
  fc.assert(
    fc.property(businessHours, instant, amount, amount, (h, s, a, b) => {
      const step = addBusinessTime(addBusinessTime(s, a, h), b, h).getTime() === addBusinessTime(s, a + b, h).getTime()
      const mid = new Date(s.getTime() + a)
      const end = new Date(s.getTime() + a + b)
      const split = businessTimeBetween(s, mid, h) + businessTimeBetween(mid, end, h) === businessTimeBetween(s, end, h)
      return step && split
    }),
    { numRuns: 200 },
  )
  t.pass()
})

/** The definition itself, one minute at a time through luxon: is the wall clock inside a window of a working local date? */
function bruteForce(from: number, to: number, h: BusinessHours): number {
  let sum = 0
  for (let m = from; m < to; m += MIN) {
    const local = DateTime.fromMillis(m, { zone: h.timezone })
    if (h.holidays.includes(local.toISODate() as string)) continue
    const day = DAYS[local.weekday - 1]
    const minute = local.hour * 60 + local.minute
    const inside = (h.days[day] ?? []).some(([s, e]) => {
      const [sh, sm] = s.split(':').map(Number)
      const [eh, em] = e.split(':').map(Number)
      return sh * 60 + sm <= minute && minute < eh * 60 + em
    })
    if (inside) sum += MIN
  }
  return sum
}

t.test('property: matches a minute-by-minute scan of the definition around DST changes', async (t) => {
  // Starts near the 2026 changes of the zones above (whole minutes: the scan samples minutes).
  const around = ['2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z', '2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z', '2026-04-04T15:00:00Z', '2026-10-03T15:30:00Z', '2025-11-02T05:00:00Z', '2026-04-04T23:00:00Z']
  const near = fc.tuple(fc.constantFrom(...around), fc.integer({ min: -36 * 60, max: 12 * 60 })).map(([iso, m]) => new Date(Date.parse(iso) + m * MIN))
  fc.assert(
    fc.property(businessHours, near, fc.integer({ min: 0, max: 48 * 60 }), (h, s, minutes) => {
      const to = s.getTime() + minutes * MIN
      return businessTimeBetween(s, new Date(to), h) === bruteForce(s.getTime(), to, h)
    }),
    { numRuns: 60 },
  )
  t.pass()
})
