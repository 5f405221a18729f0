import type { Sql } from '../db/client.js'
import { badRequest } from '../errors.js'

/** The common analytics query (API.md section 15). */
export interface RangeQuery {
  from?: string
  to?: string
  timezone?: string
  channelId?: string
  agentId?: string
  teamId?: string
}

/** A resolved range: instants as ISO UTC text with milliseconds, and the zone it was asked in. */
export interface Range {
  from: string
  to: string
  timezone: string
}

export const MAX_RANGE_DAYS = 366

/** Dates, and date-times with at most millisecond precision; an offset (or Z) is optional. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/**
 * Checks a `from` / `to` value's shape and calendar (February 30th is a 400, not a database error)
 * and says how PostgreSQL must read it: an offset names the instant; a bare date or a date-time
 * without one is local time in the requested zone.
 */
function parseInstant(name: string, value: string): { text: string; local: boolean } {
  const m = DATE_TIME.exec(value)
  const bad = () => badRequest(`field '${name}' in querystring must be an ISO 8601 date or date-time`)
  if (!m) throw bad()
  const [, y, mo, d, h, mi, s, zone] = m
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)))
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) throw bad()
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59)) throw bad()
  if (Number(y) < 1900 || Number(y) > 9999) throw bad()
  return { text: value, local: zone === undefined }
}

/** An IANA zone name as both JavaScript (Intl) and the database know it. */
function checkZone(tz: string): void {
  const bad = () => badRequest(`field 'timezone' in querystring must be an IANA time zone name`)
  // Offsets ("+01:00") and POSIX strings are not zone names, whatever a parser accepts.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(tz) || tz.length > 64) throw bad()
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
  } catch {
    throw bad()
  }
}

/**
 * Resolves `from`, `to` and `timezone` in PostgreSQL, which owns the time zone rules (DST
 * included): a local date or date-time becomes `value AT TIME ZONE tz`. Defaults: the 7 days
 * ending now; only `from`: up to now; only `to`: the 7 days before it. `to` must be after `from`
 * and at most 366 local calendar days later.
 */
export async function resolveRange(sql: Sql, q: RangeQuery): Promise<Range> {
  const timezone = q.timezone ?? 'UTC'
  checkZone(timezone)
  const from = q.from === undefined ? null : parseInstant('from', q.from)
  const to = q.to === undefined ? null : parseInstant('to', q.to)
  let row: { from: string; to: string; tooLong: boolean } | undefined
  try {
    ;[row] = await sql<{ from: string; to: string; tooLong: boolean }[]>`
      WITH input AS (
        SELECT CASE WHEN ${from?.local ?? null}::boolean THEN ${from?.text ?? null}::timestamp AT TIME ZONE ${timezone}
                    ELSE ${from?.local === false ? from.text : null}::timestamptz END AS f,
               CASE WHEN ${to?.local ?? null}::boolean THEN ${to?.text ?? null}::timestamp AT TIME ZONE ${timezone}
                    ELSE ${to?.local === false ? to.text : null}::timestamptz END AS t,
               date_trunc('milliseconds', now()) AS now
      ), resolved AS (
        SELECT COALESCE(f, COALESCE(t, now) - interval '7 days') AS f, COALESCE(t, now) AS t FROM input
      )
      SELECT to_char(f AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS from,
             to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS to,
             t > ((f AT TIME ZONE ${timezone}) + make_interval(days => ${MAX_RANGE_DAYS})) AT TIME ZONE ${timezone} AS "tooLong"
      FROM resolved`
  } catch (err) {
    const code = err instanceof Error && 'code' in err ? String(err.code) : ''
    // 22023: a zone name the database does not know (its tz data may be older than Node's).
    if (code === '22023') throw badRequest(`field 'timezone' in querystring must be an IANA time zone name`)
    if (code.startsWith('22')) throw badRequest(`field 'from' or 'to' in querystring is out of range`)
    throw err
  }
  if (!row) throw badRequest('invalid range')
  if (row.to <= row.from) throw badRequest(`field 'to' in querystring must be after 'from'`)
  if (row.tooLong) throw badRequest(`field 'to' in querystring must be at most ${MAX_RANGE_DAYS} days after 'from'`)
  return { from: row.from, to: row.to, timezone }
}

/** The period of the same length just before `r` (API.md: `previous`). */
export function previousOf(r: Range): Range {
  const from = Date.parse(r.from)
  const to = Date.parse(r.to)
  return { from: new Date(from - (to - from)).toISOString(), to: r.from, timezone: r.timezone }
}
