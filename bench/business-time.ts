/**
 * Cost of src/sla/business-time.ts on long targets (docs/sla.md, "Business time"):
 *
 *   node --import tsx bench/business-time.ts
 *
 * Pure CPU, no database. "cold" starts with an empty offset cache (the first call for a zone in a
 * process, after a JIT warm-up on another zone); "warm" is the median of 50 calls after it.
 */
import { addBusinessTime, clearOffsetCache, type BusinessHours } from '../src/sla/business-time.js'

const MIN = 60_000
const weekdays = (timezone: string, windows: Array<[string, string]>): BusinessHours => ({
  timezone,
  days: { mon: windows, tue: windows, wed: windows, thu: windows, fri: windows },
  holidays: ['2026-12-25', '2027-01-01', '2027-12-24', '2028-05-01'],
})
const scenarios: Array<[string, BusinessHours, number]> = [
  ['525600 min, Europe/Berlin Mon-Fri 09-17 (4.2 years)', weekdays('Europe/Berlin', [['09:00', '17:00']]), 525_600],
  ['525600 min, America/New_York split shift 09-12,13-17', weekdays('America/New_York', [['09:00', '12:00'], ['13:00', '17:00']]), 525_600],
  ['60 min, Europe/Berlin Mon-Fri 09-17', weekdays('Europe/Berlin', [['09:00', '17:00']]), 60],
  ['525600 min, one minute a week (10,000 years; worst valid case)', { timezone: 'America/New_York', days: { mon: [['09:00', '09:01']] }, holidays: [] }, 525_600],
]
const start = new Date('2026-01-05T08:00:00Z')
// Compile the code paths once on another zone, so "cold" measures the offset cache, not the JIT.
addBusinessTime(start, 525_600 * MIN, weekdays('Asia/Tokyo', [['09:00', '17:00']]))
for (const [name, hours, minutes] of scenarios) {
  clearOffsetCache()
  let t0 = performance.now()
  const due = addBusinessTime(start, minutes * MIN, hours)
  const cold = performance.now() - t0
  const warm: number[] = []
  for (let i = 0; i < 50; i++) {
    t0 = performance.now()
    addBusinessTime(new Date(start.getTime() + i * 60_000), minutes * MIN, hours)
    warm.push(performance.now() - t0)
  }
  warm.sort((a, b) => a - b)
  console.log(`${name}: due ${due.toISOString()}, cold ${cold.toFixed(2)} ms, warm median ${warm[25].toFixed(3)} ms`)
}
