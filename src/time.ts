/**
 * Postgres sends timestamptz as text in the session's zone, UTC here ("2026-11-21 10:00:00.123456+00").
 * The API answers ISO 8601 UTC with milliseconds; cursors keep the full text, so no microsecond
 * is lost between pages. This runs for every timestamp of every row served, so the usual shape is
 * rewritten by slicing (a profile of the list endpoint showed `new Date()` parsing at 12% of its
 * CPU); anything else goes through Date.
 */
const PG_UTC = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/

export function iso(pgTimestamp: string): string
export function iso(pgTimestamp: string | null | undefined): string | null
export function iso(pgTimestamp: string | null | undefined): string | null {
  if (pgTimestamp == null) return null
  const m = PG_UTC.exec(pgTimestamp)
  if (m) return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`
  const d = new Date(pgTimestamp.includes('T') ? pgTimestamp : pgTimestamp.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))
  return d.toISOString()
}
