import t from 'tap'
import { connect } from '../../bench/lib/db.js'
import { isRouteMissing } from '../../bench/lib/load.js'
import { target } from '../../bench/lib/report.js'
import { Rng } from '../../bench/lib/rng.js'
import { seed, workspaceSizes } from '../../bench/lib/seed.js'
import { buildVocabulary, RARE_TOKEN, sampleWord } from '../../bench/lib/words.js'
import { benchOwner, scriptContext } from '../../bench/lib/context.js'
import { loadConfig } from '../../src/config.js'
import { reconcileCounters } from '../../src/conversations/counters.js'
import { testEnv } from '../helper.js'
import { createTestDatabase } from '../setup/database.js'

t.test('workspace sizes: the largest holds at least half, the small one is the 10k baseline', async (t) => {
  for (const total of [2000, 20_000, 1_000_000]) {
    const s = workspaceSizes(total)
    t.equal(s.largest + s.small + s.others.reduce((a, b) => a + b, 0), total, `${total}: sizes add up`)
    t.ok(s.largest >= total / 2, `${total}: largest ${s.largest} >= half`)
  }
  t.equal(workspaceSizes(1_000_000).small, 10_000)
})

t.test('vocabulary is Zipf-like: a few words dominate, a long tail is rare', async (t) => {
  const v = buildVocabulary()
  const rng = new Rng(1)
  const counts = new Map<string, number>()
  for (let i = 0; i < 200_000; i++) {
    const w = sampleWord(v, rng)
    counts.set(w, (counts.get(w) ?? 0) + 1)
  }
  const sorted = [...counts.values()].sort((a, b) => b - a)
  t.ok(sorted[0] > 100 * sorted[Math.floor(sorted.length / 2)], 'the top word is 100x the median one')
  t.ok(sorted.filter((c) => c <= 10).length > 1000, 'over a thousand words seen at most 10 times in 200,000')
  t.notOk(v.words.includes(RARE_TOKEN), 'the rare token only appears where the seeder puts it')
})

t.test('seeded UUIDv7 ids sort like their timestamps; the same seed gives the same ids', async (t) => {
  const a = new Rng(5)
  const ids = [1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000].map((ms) => a.uuid7(ms))
  for (const id of ids) t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.same([...ids].sort(), ids)
  t.equal(new Rng(5).uuid7(1_700_000_000_000), ids[0])
  t.match(new Rng(9).uuid4(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
})

t.test('targets: PASS, FAIL, and n/a while a number is missing', async (t) => {
  t.equal(target('r', 0.7, '>=', 0.6).result, 'PASS')
  t.equal(target('r', 0.5, '>=', 0.6).result, 'FAIL')
  t.equal(target('r', 1.3, '<=', 1.3).result, 'PASS')
  t.equal(target('r', 50, '<', 50).result, 'FAIL')
  t.equal(target('r', undefined, '<', 50).result, 'n/a')
  t.equal(target('r', NaN, '<', 50).result, 'n/a')
})

t.test('a missing route is told apart from a 404 the route answers', async (t) => {
  const json = (code: string, message: string) => ({ status: 404, body: '', json: { code, message } })
  t.ok(isRouteMissing(json('NOT_FOUND', 'Route GET /conversations/search not found')))
  t.notOk(isRouteMissing(json('CONVERSATION_NOT_FOUND', 'Conversation not found')))
  t.notOk(isRouteMissing({ status: 200, body: '{}', json: {} }))
})

t.test('seeding writes consistent data and restores every index and foreign key', async (t) => {
  const db = await createTestDatabase()
  t.teardown(db.drop)
  const sql = connect(db.url, 8)
  t.teardown(() => sql.end({ timeout: 5 }))
  const objects = async () => ({
    indexes: (await sql<{ n: string }[]>`SELECT indexname AS n FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`).map((r) => r.n),
    fks: (await sql<{ n: string }[]>`SELECT conname AS n FROM pg_constraint WHERE contype = 'f' ORDER BY 1`).map((r) => r.n),
  })
  const before = await objects()

  const res = await seed(sql, { conversations: 600, seed: 3 })

  t.same(await objects(), before, 'same indexes and foreign keys as the migrations made')
  const [counts] = await sql<{ c: number; m: number; ws: number }[]>`
    SELECT (SELECT count(*)::int FROM conversations) AS c, (SELECT count(*)::int FROM messages) AS m,
           (SELECT count(DISTINCT workspace_id)::int FROM conversations) AS ws`
  t.equal(counts.c, 600)
  t.equal(counts.m, res.messages)
  t.ok(counts.m >= 3 * 600 && counts.m <= 7 * 600, 'three to seven messages each')
  t.equal(counts.ws, 6)
  t.ok(res.largest.size >= 300, 'the largest workspace holds at least half')

  // Derived columns agree with the messages they summarise.
  const [bad] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM conversations c
    CROSS JOIN LATERAL (SELECT max(created_at) AS last FROM messages m WHERE m.conversation_id = c.id) x
    WHERE c.last_message_at <> x.last`
  t.equal(bad.n, 0, 'last_message_at is the last message time')
  const [rare] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM messages WHERE search @@ to_tsquery('simple', ${RARE_TOKEN})`
  t.equal(rare.n, res.rareTokenMessages, 'the rare token is where the seeder says')
  // The messages trigger built the search chunks during the COPY: every message in one, one per conversation here.
  const [chunks] = await sql<{ n: number; m: number; rare: number }[]>`
    SELECT count(*)::int AS n, sum(messages)::int AS m,
           count(*) FILTER (WHERE doc @@ search_query(workspace_id, ${RARE_TOKEN}))::int AS rare FROM search_chunks`
  t.equal(chunks.n, 600, 'one chunk per conversation (3-7 messages each)')
  t.equal(chunks.m, res.messages, 'every message counted in a chunk')
  const [rareConvs] = await sql<{ n: number }[]>`
    SELECT count(DISTINCT conversation_id)::int AS n FROM messages WHERE search @@ to_tsquery('simple', ${RARE_TOKEN})`
  t.equal(chunks.rare, rareConvs.n, 'the rare token finds its conversations through the chunks')
  const [pinned] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE pinned AND status <> 'OPEN'`
  t.equal(pinned.n, 0, 'only open conversations are pinned')

  // The application's own recount finds nothing to correct in the counters the seeder computed.
  for (const ws of res.workspaces) {
    const r = await reconcileCounters(scriptContext(sql, loadConfig(testEnv()), benchOwner(ws.id)))
    t.equal(r.corrected, false, `${ws.name}: reconcile corrects nothing`)
  }
  const [unread] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE unread_count > 0 AND status = 'OPEN'`
  t.ok(unread.n > 0, 'some open conversations have unread guest messages')
})
