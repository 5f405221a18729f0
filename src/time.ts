/**
 * Postgres sends timestamptz as text ("2026-11-21 10:00:00.123456+00"). The API answers ISO 8601
 * UTC with milliseconds; cursors keep the full text, so no microsecond is lost between pages.
 */
export function iso(pgTimestamp: string): string
export function iso(pgTimestamp: string | null | undefined): string | null
export function iso(pgTimestamp: string | null | undefined): string | null {
  if (pgTimestamp == null) return null
  const d = new Date(pgTimestamp.includes('T') ? pgTimestamp : pgTimestamp.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))
  return d.toISOString()
}
