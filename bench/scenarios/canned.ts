import { listCanned } from '../../src/canned/canned.js'
import type { Config } from '../../src/config.js'
import type { Area } from '../lib/area.js'
import { resultOf } from '../lib/area.js'
import { scriptContext } from '../lib/context.js'
import type { Pool } from '../lib/db.js'
import { fmtInt, step } from '../lib/progress.js'
import { target } from '../lib/report.js'

/** Responses seeded in the largest workspace (the size). */
export const CANNED_RESPONSES = 10_000

const PHRASES = ['your refund is on its way', 'we shipped your order today', 'thanks for waiting, {{visitor.name}}', 'please reset your password here', 'our opening hours are 9 to 5']

const QUERIES = [
  { id: 'canned-picker-1c', q: 'ab', about: 'the `/` picker, `GET /canned-responses?q=ab` (two typed characters: shortcut prefix and substring matches)' },
  { id: 'canned-picker-word-1c', q: 'refund', about: '`?q=refund`: a word in a fifth of the bodies (title/body group, trigram index or usage-order walk)' },
  { id: 'canned-picker-char-1c', q: 'a', about: '`?q=a`: one character, matching nearly everything (no trigram)' },
] as const

/**
 * The canned-response picker at 10,000 responses in the largest workspace, from a single
 * connection (its latency without queueing): the target is p50 under 5 ms.
 */
export const canned: Area = {
  name: 'canned',
  ids: QUERIES.map(({ id, about }) => ({ id, about })),
  async prepare({ sql, seed, headers }) {
    const ws = seed.largest
    await seedCanned(sql, ws.id, ws.owner.userId, ws.agents.map((a) => a.userId))
    return {
      scenarios: QUERIES.map(({ id, q }) => ({
        id,
        label: `GET /canned-responses?q=${q}, 1 connection`,
        kind: 'read' as const,
        method: 'GET' as const,
        path: `/canned-responses?q=${q}`,
        headers: headers.largest,
        connections: 1,
        note: `${fmtInt(CANNED_RESPONSES)} responses`,
      })),
      targets: (results) =>
        QUERIES.filter((x) => x.id === 'canned-picker-1c' || x.id === 'canned-picker-word-1c').map(({ id, q }) =>
          target(`canned picker ?q=${q} p50 at 1 connection`, resultOf(results, id)?.p50, '<', 5, ' ms', `${fmtInt(CANNED_RESPONSES)} responses in the workspace`),
        ),
      report: async () => ({ explain: await explainPicker(sql, ws.id, ws.owner.userId) }),
    }
  },
}

/** 10,000 responses: hex shortcuts, five phrases, usage counts spread, a tenth personal, a tenth channel-limited. */
async function seedCanned(sql: Pool, workspaceId: string, ownerId: string, agents: string[]) {
  step(`seeding ${fmtInt(CANNED_RESPONSES)} canned responses`)
  await sql`DELETE FROM canned_responses WHERE workspace_id = ${workspaceId}`
  await sql`
    INSERT INTO canned_responses (id, workspace_id, scope, owner_id, shortcut, title, body, usage_count, created_at, updated_at)
    SELECT gen_random_uuid(), ${workspaceId},
           CASE WHEN i % 10 = 0 THEN 'personal' ELSE 'workspace' END,
           CASE WHEN i % 10 = 0 THEN (${agents}::text[])[1 + i % greatest(1, cardinality(${agents}::text[]))] ELSE ${ownerId} END,
           substr(md5(i::text), 1, 8) || i::text,
           'Reply ' || i,
           'Hi {{visitor.name | "there"}}, ' || (${PHRASES}::text[])[1 + i % 5] || '. Ref ' || md5((i * 7)::text),
           (i * 7919) % 500,
           now() - make_interval(secs => i), now()
    FROM generate_series(1, ${CANNED_RESPONSES}) AS i`
  await sql`VACUUM (ANALYZE) canned_responses`
}

/** EXPLAIN (ANALYZE, BUFFERS) of the picker's statement for each measured q, as src/canned/canned.ts builds it. */
async function explainPicker(sql: Pool, workspaceId: string, userId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const { id, q } of QUERIES) {
    // Capture the statement the domain function runs, then EXPLAIN it with the same parameters.
    let captured: { text: string; values: unknown[] } | undefined
    const spy = new Proxy(sql, {
      get(target, prop, receiver) {
        if (prop === 'unsafe') {
          return (text: string, values: unknown[]) => {
            captured = { text, values }
            return target.unsafe(text, values as never)
          }
        }
        return Reflect.get(target, prop, receiver)
      },
    })
    // The cursor codec is the only part of the configuration a first page reads.
    const config = { VISITOR_SESSION_SECRET: 'bench-explain-secret-000000' } as Config
    const ctx = scriptContext(spy as Pool, config, { kind: 'member', workspaceId, userId, role: 'owner', name: 'Bench', email: '' })
    await listCanned(ctx, { q, limit: 20 })
    if (!captured) continue
    const rows = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) ${captured.text}`, captured.values as never)
    out[id] = rows.map((r) => r['QUERY PLAN']).join('\n')
  }
  return out
}
