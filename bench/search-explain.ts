/**
 * Seeds a search benchmark database (search_chunks filled by the messages trigger) and prints
 * EXPLAIN (ANALYZE, BUFFERS) of the search's ranking statement
 * for a rare word, a common word and a guest substring, the ILIKE baseline, and timings of the
 * whole search (both queries) as the route runs it.
 *
 *   node --import tsx bench/search-explain.ts [conversations=100000] [messagesPerConversation=5]
 *
 * Uses database parley_search_bench_<conversations> (created from the test template; reused
 * when it exists). docs/search.md quotes its output.
 */
import postgres from 'postgres'
import { loadConfig } from '../src/config.js'
import { useTextTypes } from '../src/db/client.js'
import { searchConversations } from '../src/search/search.js'
import { benchOwner, scriptContext } from './lib/context.js'
import { databaseUrl, ensureTemplate, ADMIN_URL } from '../test/setup/database.js'

const conversations = Number(process.argv[2] ?? 100_000)
const perConversation = Number(process.argv[3] ?? 5)
const name = `parley_search_bench_${conversations}`
const WS = '00000000-0000-4000-8000-000000000001'
const OTHER_WS = '00000000-0000-4000-8000-000000000002'

const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`
if (!exists) {
  const template = await ensureTemplate()
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`)
}
await admin.end()

const url = databaseUrl(name)
const captured: { query: string; params: unknown[] }[] = []
const sql = postgres(url, {
  max: 2,
  onnotice: () => {},
  connection: { TimeZone: 'UTC' },
  debug: (_conn, query, params) => captured.push({ query, params: params as unknown[] }),
})
// As in the app: timestamps come back as text.
useTextTypes(sql)

if (!exists) {
  const t0 = Date.now()
  console.log(`seeding ${conversations} conversations x ${perConversation} messages ...`)
  await sql.unsafe(`
    INSERT INTO workspaces (id, name) VALUES ('${WS}', 'Bench'), ('${OTHER_WS}', 'Other');
    INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
    VALUES ('${WS}', '${WS}', 'web', 'ct_bench', 'is_bench'), ('${OTHER_WS}', '${OTHER_WS}', 'web', 'ct_other', 'is_other');
    DROP INDEX guests_name_trgm_idx;
    DROP INDEX guests_email_trgm_idx;`)
  // 10% of the rows go to a second workspace, so tenancy filtering is exercised.
  await sql.unsafe(`
    INSERT INTO guests (id, workspace_id, channel_id, name, email)
    SELECT gen_random_uuid(), w, w, first || ' ' || last, lower(first) || '.' || i || '@' || dom
    FROM (SELECT i, CASE WHEN i % 10 = 0 THEN '${OTHER_WS}' ELSE '${WS}' END::uuid AS w,
                 (ARRAY['Anna','Ben','Chloe','David','Emma','Felix','Grace','Hugo','Iris','Jonas'])[1 + i % 10] || (i % 997) AS first,
                 (ARRAY['Smith','Jones','Garcia','Miller','Davis','Novak','Rossi','Dubois','Tanaka','Kowalski'])[1 + (i / 10) % 10] AS last,
                 (ARRAY['gmail.com','example.org','mail.test','corp.example'])[1 + i % 4] AS dom
          FROM generate_series(1, ${conversations}) i) s`)
  await sql.unsafe(`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, created_at, last_message_at, updated_at, deleted_at)
    SELECT gen_random_uuid(), g.workspace_id, g.channel_id, g.id,
           CASE WHEN random() < 0.7 THEN 'RESOLVED' ELSE 'OPEN' END,
           t, t, t, CASE WHEN random() < 0.02 THEN t END
    FROM (SELECT g.*, timestamptz '2024-01-01' + random() * interval '700 days' AS t FROM guests g) g`)
  // Bodies: 6..15 words from a Zipf-like vocabulary of 50,000 words ("w0" most frequent),
  // plus "hello" in about 30% of messages (a common word) and "refund" in 2%.
  await sql.unsafe(`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    SELECT gen_random_uuid(), c.workspace_id, c.id,
           CASE WHEN k % 2 = 1 THEN 'GUEST' ELSE 'AGENT' END, NULL, 'Bench',
           concat_ws(' ',
             CASE WHEN random() < 0.3 THEN 'hello' END,
             (SELECT string_agg('w' || floor(power(random(), 4) * 50000)::int, ' ')
              FROM generate_series(1, 6 + (k * 7 + length(c.id::text)) % 10) WHERE c.id IS NOT NULL),
             CASE WHEN random() < 0.02 THEN 'refund' END),
           c.created_at + k * interval '1 minute'
    FROM conversations c, generate_series(1, ${perConversation}) k`)
  // A rare word: five more messages of the workspace (inserted: search_chunks follow inserts only).
  await sql.unsafe(`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    SELECT gen_random_uuid(), c.workspace_id, c.id, 'GUEST', NULL, 'Bench', 'a note about zanzibar', c.created_at + interval '1 hour'
    FROM (SELECT * FROM conversations WHERE workspace_id = '${WS}' ORDER BY id LIMIT 5) c`)
  console.log(`rows inserted in ${Date.now() - t0} ms`)
}
const [indexed] = await sql`SELECT 1 FROM pg_indexes WHERE indexname = 'guests_name_trgm_idx'`
if (!indexed) {
  const t1 = Date.now()
  await sql`SET maintenance_work_mem = '512MB'`
  await sql`CREATE INDEX IF NOT EXISTS guests_name_trgm_idx ON guests USING gin (name gin_trgm_ops)`
  await sql`CREATE INDEX IF NOT EXISTS guests_email_trgm_idx ON guests USING gin (email gin_trgm_ops)`
  await sql`VACUUM ANALYZE`
  console.log(`indexes built in ${Date.now() - t1} ms`)
}

const [{ n: msgCount }] = await sql<{ n: string }[]>`SELECT count(*)::text AS n FROM messages`
const [{ n: convCount }] = await sql<{ n: string }[]>`SELECT count(*)::text AS n FROM conversations`
console.log(`\n# ${convCount} conversations, ${msgCount} messages (90% in the searched workspace)\n`)

const config = loadConfig({ AUTH_JWT_SECRET: 'x'.repeat(32), VISITOR_SESSION_SECRET: 'y'.repeat(32) })
const ctx = scriptContext(sql, config, benchOwner(WS))

async function explainSearch(label: string, q: string) {
  captured.length = 0
  await searchConversations(ctx, { q, limit: 20 })
  const main = captured.find((c) => c.query.includes('ranked AS')) ?? captured.find((c) => c.query.includes('WITH gh AS'))!
  const plan = await sql.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${main.query}`, main.params as never[])
  console.log(`## ${label}: q=${JSON.stringify(q)}\n`)
  console.log(plan.map((r) => r['QUERY PLAN']).join('\n'))
  const times: number[] = []
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now()
    await searchConversations(ctx, { q, limit: 20 })
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  console.log(`\nwhole search (ranked page + excerpts), 15 runs: p50 ${times[7]!.toFixed(1)} ms, max ${times[14]!.toFixed(1)} ms\n`)
  return times[7]!
}

const rare = await explainSearch('rare word', 'zanzibar')
await explainSearch('common word', 'hello')
await explainSearch('medium word + websearch syntax', 'refund -w1')
await explainSearch('guest substring', 'kowalski')

console.log('## ILIKE baseline (what a peer does): rare word over message bodies\n')
const t0 = performance.now()
const ilike = await sql.unsafe(
  `EXPLAIN (ANALYZE, BUFFERS) SELECT DISTINCT conversation_id FROM messages WHERE workspace_id = $1 AND body ILIKE $2 LIMIT 20`,
  [WS, '%zanzibar%'],
)
const ilikeMs = performance.now() - t0
console.log(ilike.map((r) => r['QUERY PLAN']).join('\n'))
console.log(`\nILIKE ${ilikeMs.toFixed(1)} ms vs full-text p50 ${rare.toFixed(1)} ms: ${(ilikeMs / rare).toFixed(0)}x`)
await sql.end()
