// The Citus path (docs/scaling.md): every tenant table carries a NOT NULL workspace_id, the
// distribution column. The tables that do not are listed here, each with its reason; a new table
// without one fails this test until it is keyed or listed (and docs/scaling.md says why).
import t from 'tap'
import { build } from '../helper.js'

const NOT_KEYED: Record<string, string> = {
  workspaces: 'the tenant itself: distributed by its id (co-located with workspace_id everywhere else)',
  webhook_events:
    'payment providers’ deliveries, deduplicated by (provider, event_id) before the workspace is known; workspace_id is filled when the event names one. A reference-sized, cross-tenant table: stays on the coordinator',
}

t.test('every table but the listed ones has a NOT NULL workspace_id', async (t) => {
  const { app } = await build(t)
  const rows = await app.deps.sql<{ name: string }[]>`
    SELECT c.relname AS name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = c.oid AND a.attname = 'workspace_id' AND a.attnotnull AND NOT a.attisdropped)
    ORDER BY 1`
  t.same(rows.map((r) => r.name), Object.keys(NOT_KEYED).sort(), 'the tables without a NOT NULL workspace_id are exactly the listed ones')
  const [{ n }] = await app.deps.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
    WHERE ns.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition`
  t.ok(n > Object.keys(NOT_KEYED).length + 10, `${n} tables in all: the rest are keyed by workspace_id`)
})
