/**
 * EXPLAIN (ANALYZE, BUFFERS) of every conversation-list query, as the routes build them, on a
 * seeded database: 200k conversations in one workspace (plus 50k in another): each list's keys
 * statement (sectionQuery) and the page's rows statement (pageRowsQuery). Writes the plans to
 * bench/results/lists-explain.txt and fails if any plan sorts or scans the table sequentially.
 *
 *   node --import tsx bench/lists-explain.ts          (EXPLAIN_DB=name to keep/reuse the database)
 */
import { writeFileSync } from 'node:fs'
import postgres from 'postgres'
import { runMigrations } from '../src/db/migrate.js'
import { agentsQuery } from '../src/conversations/agents.js'
import { guestHistoryQuery, pageRowsQuery, pageSections, resolveList, sectionQuery, type At, type ListQuery } from '../src/conversations/lists.js'

const ADMIN = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const NAME = process.env.EXPLAIN_DB ?? 'parley_lists_explain'
const N = Number(process.env.EXPLAIN_ROWS ?? 200_000)
const url = new URL(ADMIN)
url.pathname = `/${NAME}`

const WS = '11111111-1111-4111-8111-111111111111'
const WS2 = '22222222-2222-4222-8222-222222222222'
const HEAVY_GUEST = '33333333-3333-4333-8333-333333333333'

async function seed(sql: postgres.Sql) {
  await sql`INSERT INTO workspaces (id, name) VALUES (${WS}, 'Big'), (${WS2}, 'Other')`
  await sql`INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
    SELECT md5('c' || i)::uuid, CASE WHEN i < 5 THEN ${WS}::uuid ELSE ${WS2}::uuid END, 'ch' || i, 'ct' || i, 'is' || i
    FROM generate_series(0, 5) i`
  await sql`INSERT INTO members (workspace_id, user_id, name, email, role)
    SELECT ${WS}, 'agent-' || i, 'Agent ' || i, 'a' || i || '@x.test', 'agent' FROM generate_series(1, 20) i`
  await sql`INSERT INTO guests (id, workspace_id, channel_id, name, email)
    SELECT md5('g' || i)::uuid, ${WS}, md5('c' || (i % 5))::uuid, 'Guest ' || i, 'g' || i || '@x.test'
    FROM generate_series(0, 49999) i`
  await sql`INSERT INTO guests (id, workspace_id, channel_id, name, email) VALUES (${HEAVY_GUEST}, ${WS}, md5('c0')::uuid, 'Heavy', 'h@x.test')`
  await sql`INSERT INTO guests (id, workspace_id, channel_id, name, email)
    SELECT md5('o' || i)::uuid, ${WS2}, md5('c5')::uuid, 'Other ' || i, 'o' || i || '@x.test' FROM generate_series(0, 9999) i`
  // Section 17's labels: label k is on about 30/(k+1) % of the conversations (L0 30%, L19 1.5%).
  await sql`INSERT INTO labels (id, workspace_id, name, color) SELECT md5('l' || k)::uuid, ${WS}, 'L' || k, '#000000' FROM generate_series(0, 19) k`
  // Times spread over a year with microseconds; ~2% pinned, 60% live (OPEN 88%, PENDING 8%,
  // SNOOZED 4% of them), 70% assigned, 3% deleted; priority none 70%, low 10, medium 10, high 7,
  // urgent 3; labels as above.
  await sql`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, pinned, assigned_agent_id, unread_count,
      last_message_at, created_at, updated_at, closed_at, deleted_at, priority, label_ids)
    SELECT gen_random_uuid(), ${WS}, md5('c' || (i % 50000 % 5))::uuid,
      CASE WHEN i % 400 = 0 THEN ${HEAVY_GUEST}::uuid ELSE md5('g' || (i % 50000))::uuid END,
      s.status, random() < 0.02,
      CASE WHEN random() < 0.7 THEN 'agent-' || (1 + floor(random() * 20))::int END,
      CASE WHEN random() < 0.3 THEN 1 + floor(random() * 5)::int ELSE 0 END,
      t.created + t.age / 2, t.created, t.created + t.age,
      CASE WHEN s.status <> 'OPEN' AND random() < 0.98 THEN t.created + t.age END,
      CASE WHEN random() < 0.03 THEN t.created + t.age END,
      CASE WHEN p.r < 0.7 THEN NULL WHEN p.r < 0.8 THEN 'low' WHEN p.r < 0.9 THEN 'medium' WHEN p.r < 0.97 THEN 'high' ELSE 'urgent' END,
      ARRAY(SELECT md5('l' || k)::uuid FROM generate_series(0, 19) k WHERE random() < 0.3 / (k + 1) + 0 * i)
    FROM generate_series(1, ${N}) i
    CROSS JOIN LATERAL (SELECT CASE WHEN random() < 0.6 THEN (CASE WHEN random() < 0.88 THEN 'OPEN' WHEN random() < 0.66 THEN 'PENDING' ELSE 'SNOOZED' END)
                                    WHEN random() < 0.9 THEN 'RESOLVED' ELSE 'CLOSED' END || '' AS status, i AS k) s
    CROSS JOIN LATERAL (SELECT random() AS r, i AS k) p
    CROSS JOIN LATERAL (SELECT now() - random() * interval '365 days' AS created, random() * interval '10 days' AS age, i AS k) t`
  await sql`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, pinned, assigned_agent_id, last_message_at, created_at, updated_at)
    SELECT gen_random_uuid(), ${WS2}, md5('c5')::uuid, md5('o' || (i % 10000))::uuid, 'OPEN', random() < 0.02, 'agent-1', t, t, t
    FROM generate_series(1, ${N / 4}) i, LATERAL (SELECT now() - random() * interval '365 days' AS t, i AS k) x`
  // What autovacuum does on a live database: statistics and the visibility map (index-only scans).
  await sql`VACUUM ANALYZE`
}

async function main() {
  const admin = postgres(ADMIN, { max: 1, onnotice: () => {} })
  const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${NAME}`
  const fresh = !exists || !process.env.EXPLAIN_DB
  if (fresh) {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`)
    await admin.unsafe(`CREATE DATABASE ${NAME}`)
  }
  await admin.end()
  if (fresh) await runMigrations(url.toString(), { createDatabase: false })
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {}, connection: { TimeZone: 'UTC' } })
  if (fresh) {
    const t0 = Date.now()
    await seed(sql)
    console.log(`seeded ${N} + ${N / 4} conversations in ${Date.now() - t0} ms`)
  }

  // Cursor positions half-way through each list, taken from the data.
  const mid = async (where: string, col: string, dir: 'ASC' | 'DESC') => {
    const [row] = await sql.unsafe(
      `SELECT ${col}::text AS t, id::text AS id FROM conversations c WHERE c.workspace_id = '${WS}' AND c.deleted_at IS NULL AND ${where}
       ORDER BY ${col} ${dir}, id ${dir} OFFSET 40000 LIMIT 1`,
    )
    return { t: row!.t as string, id: row!.id as string }
  }
  const caller = { workspaceId: WS, userId: 'agent-7' }
  const q = (over: Partial<ListQuery>): ListQuery => ({ limit: 20, ...over })
  type Case = { name: string; query: postgres.Fragment }
  const cases: Case[] = []
  const list = (name: string, kind: 'open' | 'mine' | 'closed', lq: ListQuery, section: { pinned?: boolean; after?: { rank?: number; t: string; id: string } }) =>
    cases.push({ name, query: sectionQuery(sql, resolveList(kind, caller, lq), section, 21) })
  // A descending pinned-first list's page as the route reads it (pageSections: one backward scan,
  // pinned rows first; past a cursor, the row (pinned, [rank,] t, id) compared).
  const page = (name: string, kind: 'open' | 'mine', lq: ListQuery, at?: At) => {
    const r = resolveList(kind, caller, lq)
    cases.push({ name, query: sectionQuery(sql, r, pageSections(r, at)[0]!, 21) })
  }

  const openMidDesc = await mid("c.status = 'OPEN' AND NOT c.pinned", 'c.last_message_at', 'DESC')
  const openMidAsc = await mid("c.status = 'OPEN' AND NOT c.pinned", 'c.created_at', 'ASC')
  page('open, lastMessageAt desc, first page (one backward scan, pinned first)', 'open', q({}))
  page('open, lastMessageAt desc, cursor deep in the unpinned rows', 'open', q({}), { pinned: false, ...openMidDesc })
  list('open, createdAt asc, cursor deep in the unpinned section', 'open', q({ sortBy: 'createdAt', sortOrder: 'asc' }), { pinned: false, after: openMidAsc })
  list('open, createdAt asc, first page: pinned section', 'open', q({ sortBy: 'createdAt', sortOrder: 'asc' }), { pinned: true })
  page('open, updatedAt desc, first page', 'open', q({ sortBy: 'updatedAt' }))
  page('open, readStatus=unread + channelId, first page', 'open', q({ readStatus: 'unread', channelId: '' }))
  page('open, unassignedOnly, first page', 'open', q({ unassignedOnly: true }))
  page('mine, lastMessageAt desc, first page', 'mine', q({}))
  list('mine, status=OPEN, createdAt asc, unpinned', 'mine', q({ status: 'OPEN', sortBy: 'createdAt', sortOrder: 'asc' }), { pinned: false })
  const closedMid = await mid("c.status IN ('RESOLVED','CLOSED')", "COALESCE(c.closed_at, '-infinity'::timestamptz)", 'DESC')
  list('closed, closedAt desc (default), first page', 'closed', q({}), {})
  list('closed, closedAt desc, cursor deep', 'closed', q({}), { after: closedMid })
  list('closed, lastMessageAt asc', 'closed', q({ sortBy: 'lastMessageAt', sortOrder: 'asc' }), {})
  list('closed, createdAt desc', 'closed', q({ sortBy: 'createdAt' }), {})
  list('closed, updatedAt asc', 'closed', q({ sortBy: 'updatedAt', sortOrder: 'asc' }), {})
  // Section 17 (docs/triage.md): the new parameters. A label filter may be a top-N sort of the
  // label's rows (a rare label) or a walk of the list index that filters (a common one).
  const L0 = (await sql`SELECT md5('l0')::uuid::text AS id`)[0]!.id as string
  const L19 = (await sql`SELECT md5('l19')::uuid::text AS id`)[0]!.id as string
  page('open, labelIds=<common label, 30%>, first page', 'open', q({ labelIds: L0 }))
  page('open, labelIds=<rare label, 1.5%>, first page', 'open', q({ labelIds: L19 }))
  page('open, labelIds=<two labels>, first page', 'open', q({ labelIds: `${L0},${L19}` }))
  page('open, sortBy=priority, first page', 'open', q({ sortBy: 'priority' }))
  const [prioMid] = await sql`
    SELECT priority_rank AS rank, last_message_at::text AS t, id::text AS id FROM conversations c
    WHERE workspace_id = ${WS} AND deleted_at IS NULL AND status = 'OPEN' AND NOT pinned
    ORDER BY priority_rank DESC, last_message_at DESC, id DESC OFFSET 40000 LIMIT 1`
  page('open, sortBy=priority, cursor deep in the unpinned rows', 'open', q({ sortBy: 'priority' }), {
    pinned: false,
    rank: prioMid!.rank as number,
    t: prioMid!.t as string,
    id: prioMid!.id as string,
  })
  page('open, sortBy=priority + labelIds=<common>, first page', 'open', q({ sortBy: 'priority', labelIds: L0 }))
  page('status=pending, first page', 'open', q({ status: 'pending' }))
  page('status=snoozed, first page', 'open', q({ status: 'snoozed' }))
  page('status=active, first page', 'open', q({ status: 'active' }))
  page('open, assignee=me, first page', 'open', q({ assignee: 'me' }))
  page('open, assignee=none, first page', 'open', q({ assignee: 'none' }))
  page('open, priority=urgent,high, first page', 'open', q({ priority: 'urgent,high' }))
  cases.push({ name: 'guest history (guest with 500 conversations), first page', query: guestHistoryQuery(sql, { kind: 'member', ...caller }, HEAVY_GUEST, undefined, 21) })
  // The second statement of every list page: the page's rows by id (one text, a generic plan).
  const pageIds = (await sql`
    SELECT id::text AS id FROM conversations WHERE workspace_id = ${WS} AND deleted_at IS NULL AND status = 'OPEN' ORDER BY last_message_at DESC LIMIT 20`).map((r) => r.id as string)
  cases.push({ name: "a page's rows by id (pageRowsQuery, 20 ids)", query: pageRowsQuery(sql, caller, pageIds) })
  cases.push({
    name: 'available-agents openAssigned (grouped)',
    query: agentsQuery(sql, WS),
  })

  // channelId filter: a real channel id.
  const fixChannel = cases.find((c) => c.name.includes('channelId'))!
  const channelList = resolveList('open', caller, q({ readStatus: 'unread', channelId: (await sql`SELECT md5('c2')::uuid::text AS id`)[0]!.id }))
  fixChannel.query = sectionQuery(sql, channelList, pageSections(channelList)[0]!, 21)

  let out = `# EXPLAIN (ANALYZE, BUFFERS), ${N} conversations in one workspace (+${N / 4} in another)\n`
  let bad = 0
  for (const mode of ['custom', 'force_generic_plan'] as const) {
    for (const c of cases) {
      const plan = await sql.begin(async (tx) => {
        if (mode !== 'custom') await tx.unsafe(`SET LOCAL plan_cache_mode = ${mode}`)
        return tx`EXPLAIN (ANALYZE, BUFFERS) ${c.query}`
      })
      const text = plan.map((r) => r['QUERY PLAN']).join('\n')
      // A rare label's rows come from the GIN posting list and are top-N sorted (bounded by the label's rows).
      const sorts = /\bSort\b/.test(text) && !c.name.startsWith('available-agents') && !c.name.includes('labelIds')
      const seq = /Seq Scan on conversations/.test(text)
      if (sorts || seq) bad++
      if (mode === 'custom' || sorts || seq) out += `\n## ${c.name}${mode === 'custom' ? '' : ` [${mode}]`}${sorts ? '  !! SORT' : ''}${seq ? '  !! SEQ SCAN' : ''}\n${text}\n`
    }
  }
  writeFileSync(new URL('./results/lists-explain.txt', import.meta.url), out)
  console.log(out)
  await sql.end()
  if (!process.env.EXPLAIN_DB) {
    const a = postgres(ADMIN, { max: 1, onnotice: () => {} })
    await a.unsafe(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`)
    await a.end()
  }
  if (bad) {
    console.error(`${bad} plan(s) sort or scan sequentially`)
    process.exit(1)
  }
}

await main()
