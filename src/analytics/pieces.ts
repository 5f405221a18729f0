import type { MetricGrain } from '../db/schema.js'

/**
 * Splits a time range into the rollup periods it covers whole (UTC months, thirds of months,
 * days, hours) and the raw parts at its ends, which are read from metric_events. Pure UTC
 * arithmetic on instants: the time zone only decides where a range or bucket begins and ends,
 * and PostgreSQL computes that (src/analytics/range.ts, timeseries buckets).
 *
 * A third of a month ('t') starts on the 1st, 11th or 21st; the last one runs to the month's
 * end. With it a year is at most about 12 months, 4 thirds, 18 days, 46 hours and 2 raw parts, so
 * the rows read stay few however busy the workspace. Hour rollups exist for the workspace and
 * channel dims only (src/db/schema.ts): without them (`hours` false) the raw parts reach to the
 * day boundaries.
 */
export type Piece = { raw: true; lo: string; hi: string } | { raw: false; grain: MetricGrain; start: string }

const HOUR = 3_600_000
const DAY = 24 * HOUR

const iso = (ms: number) => new Date(ms).toISOString()

function monthEnd(ms: number): number {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/** The end of the third of a month starting at `ms`, or null when `ms` does not start one. */
function thirdEnd(ms: number): number | null {
  if (ms % DAY !== 0) return null
  const d = new Date(ms)
  const day = d.getUTCDate()
  if (day === 1 || day === 11) return ms + 10 * DAY
  if (day === 21) return monthEnd(ms)
  return null
}

export function decompose(lo: number, hi: number, hours = true): Piece[] {
  const out: Piece[] = []
  let t = lo
  const raw = (e: number) => {
    out.push({ raw: true, lo: iso(t), hi: iso(e) })
    t = e
  }
  while (t < hi) {
    const step = hours ? HOUR : DAY
    if (t % step !== 0) {
      raw(Math.min(t - (t % step) + step, hi))
      continue
    }
    const d = new Date(t)
    const third = thirdEnd(t)
    if (d.getUTCDate() === 1 && t % DAY === 0 && monthEnd(t) <= hi) {
      out.push({ raw: false, grain: 'm', start: iso(t) })
      t = monthEnd(t)
    } else if (third !== null && third <= hi) {
      out.push({ raw: false, grain: 't', start: iso(t) })
      t = third
    } else if (t % DAY === 0 && t + DAY <= hi) {
      out.push({ raw: false, grain: 'd', start: iso(t) })
      t += DAY
    } else if (hours && t + HOUR <= hi) {
      out.push({ raw: false, grain: 'h', start: iso(t) })
      t += HOUR
    } else {
      raw(hi)
    }
  }
  return out
}
