import type { MetricGrain } from '../db/schema.js'

/**
 * Splits a time range into the rollup periods it covers whole (UTC months, days, hours) and the
 * raw parts at its ends, shorter than an hour, which are read from metric_events. Pure UTC
 * arithmetic on instants: the time zone only decides where a range or bucket begins and ends,
 * and PostgreSQL computes that (src/analytics/range.ts, timeseries buckets).
 */
export type Piece = { raw: true; lo: string; hi: string } | { raw: false; grain: MetricGrain; start: string }

const HOUR = 3_600_000
const DAY = 24 * HOUR

const startOfMonth = (ms: number) => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}
const nextMonth = (ms: number) => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Greedy from the left: at each point the largest aligned period that fits, so a year is at most
 * about 12 months, 60 days, 46 hours and 2 raw parts. `lo` and `hi` are milliseconds.
 */
export function decompose(lo: number, hi: number): Piece[] {
  const out: Piece[] = []
  let t = lo
  while (t < hi) {
    if (t % HOUR !== 0) {
      const e = Math.min(t - (t % HOUR) + HOUR, hi)
      out.push({ raw: true, lo: iso(t), hi: iso(e) })
      t = e
    } else if (startOfMonth(t) === t && nextMonth(t) <= hi) {
      out.push({ raw: false, grain: 'm', start: iso(t) })
      t = nextMonth(t)
    } else if (t % DAY === 0 && t + DAY <= hi) {
      out.push({ raw: false, grain: 'd', start: iso(t) })
      t += DAY
    } else if (t + HOUR <= hi) {
      out.push({ raw: false, grain: 'h', start: iso(t) })
      t += HOUR
    } else {
      out.push({ raw: true, lo: iso(t), hi: iso(hi) })
      t = hi
    }
  }
  return out
}
