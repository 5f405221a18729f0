import fc from 'fast-check'
import postgres from 'postgres'
import t from 'tap'
import { iso } from '../../src/time.js'
import { ADMIN_URL } from '../setup/database.js'

t.test('iso() formats what Postgres sends exactly like Date would, milliseconds truncated', async (t) => {
  t.equal(iso('2026-11-21 10:00:00.123456+00'), '2026-11-21T10:00:00.123Z')
  t.equal(iso('2026-11-21 10:00:00+00'), '2026-11-21T10:00:00.000Z')
  t.equal(iso('2026-11-21 10:00:00.5+00'), '2026-11-21T10:00:00.500Z')
  t.equal(iso('2026-11-21 12:00:00+02'), '2026-11-21T10:00:00.000Z', 'another zone still comes out in UTC')
  t.equal(iso(null), null)
  // The shape json_agg writes a timestamptz in (SLA targets' dueAt), fast path too.
  t.equal(iso('2026-11-21T10:00:00.123456+00:00'), '2026-11-21T10:00:00.123Z')
  t.equal(iso('2026-11-21T10:00:00+00:00'), '2026-11-21T10:00:00.000Z')
  t.equal(iso('2026-11-21T10:00:00.56+00:00'), '2026-11-21T10:00:00.560Z')
  t.equal(iso('2026-11-21T12:00:00.5+02:00'), '2026-11-21T10:00:00.500Z', 'another zone in json, through Date')

  // Against the real server's text output for random instants (the fast path must agree with Date).
  const sql = postgres(ADMIN_URL, { max: 1, connection: { TimeZone: 'UTC' } })
  t.teardown(() => sql.end())
  const micros = fc.sample(fc.bigInt({ min: 0n, max: 4_102_444_800_000_000n }), 200)
  const rows = await sql.unsafe<{ text: string; ms: string }[]>(
    `SELECT (to_timestamp(0) + (x || ' microseconds')::interval)::text AS text,
            floor(extract(epoch FROM to_timestamp(0) + (x || ' microseconds')::interval) * 1000)::bigint::text AS ms
     FROM unnest($1::bigint[]) AS x`,
    [micros.map(String)] as never[],
  )
  for (const r of rows) t.equal(iso(r.text), new Date(Number(r.ms)).toISOString(), r.text)
  const json = await sql.unsafe<{ text: string; ms: string }[]>(
    `SELECT json_build_object('t', to_timestamp(0) + (x || ' microseconds')::interval)->>'t' AS text,
            floor(extract(epoch FROM to_timestamp(0) + (x || ' microseconds')::interval) * 1000)::bigint::text AS ms
     FROM unnest($1::bigint[]) AS x`,
    [micros.map(String)] as never[],
  )
  for (const r of json) t.equal(iso(r.text), new Date(Number(r.ms)).toISOString(), `json ${r.text}`)
})
