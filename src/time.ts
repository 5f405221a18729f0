/**
 * Postgres sends timestamptz as text in the session's zone, UTC here ("2026-11-21 10:00:00.123456+00"),
 * and inside json ("2026-11-21T10:00:00.123456+00:00", e.g. a json_agg of SLA targets). The API
 * answers ISO 8601 UTC with milliseconds; cursors keep the full text, so no microsecond is lost
 * between pages. This runs for every timestamp of every row served (~120 per list page), so the
 * usual shapes are rewritten by slicing: a profile of the list endpoint showed `new Date()`
 * parsing at 12% of its CPU, and a regex match's array and captures were ~20 KB of garbage a page
 * (docs/lists.md, "Per-request CPU"). Anything else goes through Date.
 */
const PG_UTC = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d{1,6})?\+00(?::00)?$/

export function iso(pgTimestamp: string): string
export function iso(pgTimestamp: string | null | undefined): string | null
export function iso(pgTimestamp: string | null | undefined): string | null {
  if (pgTimestamp == null) return null
  const s = pgTimestamp
  if (PG_UTC.test(s)) {
    const day = s.slice(0, 10)
    // No fraction: ".000"; else its digits (before "+00" or "+00:00"), cut or padded to three.
    if (s.charCodeAt(19) !== 46 /* . */) return `${day}T${s.slice(11, 19)}.000Z`
    const digits = s.length - (s.charCodeAt(s.length - 3) === 58 /* : */ ? 26 : 23)
    return digits >= 3 ? `${day}T${s.slice(11, 23)}Z` : `${day}T${s.slice(11, 20)}${s.slice(20, 20 + digits).padEnd(3, '0')}Z`
  }
  const d = new Date(s.includes('T') ? s : s.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))
  return d.toISOString()
}
