import t from 'tap'
import { createSql } from '../../src/db/client.js'
import { pageSections, resolveList, sectionQuery } from '../../src/conversations/lists.js'
import { build, seedWorkspace } from '../helper.js'
import { BASE_US, insertConversations } from './seed.js'

/**
 * A list page after a cursor is planned once per connection (docs/lists.md, "Deep pages"): the
 * cursor's values and the workspace are InitPlan values, so PostgreSQL keeps the prepared section
 * statement's generic plan instead of planning it anew for each cursor. Before, a deep page paid
 * a full plan of the five-table statement on every request (0 generic / all custom plans).
 */
t.test('cursor pages keep one plan per connection; label pages are planned per value', async (t) => {
  const { app, databaseUrl } = await build(t)
  const big = await seedWorkspace(app)
  // One large workspace (20,000 rows, below) and several small ones, with statistics, so a plan that
  // read the values would differ (at a few hundred rows the generic plan wins against planning anyway).
  const [guest] = await insertConversations(app, big, [{ lastMessageAt: BASE_US, createdAt: BASE_US }])
  // The small ones: a generic estimate of `workspace_id = $1` is one workspace's average share.
  for (let w = 0; w < 4; w++) {
    const small = await seedWorkspace(app, `Small ${w}`)
    await insertConversations(app, small, Array.from({ length: 5 }, (_, i) => ({ lastMessageAt: BASE_US + i * 1000, createdAt: BASE_US + i })))
  }
  const sql = createSql(databaseUrl, 1)
  t.teardown(() => sql.end())
  await sql`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, last_message_at, created_at, updated_at)
    SELECT gen_random_uuid(), ${big.workspaceId}, ${big.channelId}, ${guest!.guestId}, 'OPEN', at, at, at
    FROM generate_series(1, 20000) i, LATERAL (SELECT now() - i * interval '1 second' AS at) x`
  await sql`ANALYZE conversations`

  // The cursors a client walking the list by HTTP gets, pages of 20.
  const cursors: string[] = []
  let url = '/conversations?limit=20'
  for (let i = 0; i < 12; i++) {
    const res = await app.inject({ method: 'GET', url, headers: big.agent.headers })
    t.equal(res.statusCode, 200)
    const next = res.json().nextCursor as string | null
    if (!next) break
    cursors.push(next)
    url = `/conversations?limit=20&cursor=${encodeURIComponent(next)}`
  }
  t.equal(cursors.length, 12, 'twelve pages deep')

  // The same statement the route runs for those cursors, on one connection.
  const caller = { workspaceId: big.workspaceId, userId: big.agent.userId }
  const keyOf = (cursor: string) => JSON.parse(Buffer.from(cursor.split('.')[0]!, 'base64url').toString('utf8')).k as [boolean, string, string]
  const run = async (labelIds?: string) => {
    const r = resolveList('open', caller, { limit: 20, ...(labelIds ? { labelIds } : {}) })
    const pages: string[][] = []
    for (const cursor of cursors) {
      const [pinned, at, id] = keyOf(cursor)
      // The route's own statement for that cursor (pageSections: one backward scan, pinned first).
      pages.push((await sectionQuery(sql, r, pageSections(r, { pinned, t: at, id })[0]!, 21)).map((row) => row.id))
    }
    return pages
  }
  const pages = await run()
  t.equal(new Set(pages.flat()).size, pages.flat().length - 11, 'consecutive pages overlap by their extra row only')
  // The plan PostgreSQL would make for these values against its generic plan: the same plan at the
  // same estimated cost when nothing in the statement reads the values. (The counts below follow
  // from it, but at this table's size a dearer generic plan can still win against planning.)
  const stmt = (await sql<{ statement: string }[]>`
    SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%LIMIT 21%' AND statement NOT LIKE '%label_ids @>%'`)[0]!.statement
  const [pinned, at, id] = keyOf(cursors[0]!)
  t.equal(pinned, false)
  const literal = (v: string) => `'${v.replaceAll("'", "''")}'`
  const args = [big.workspaceId, big.agent.userId, big.agent.userId, String(pinned), at, id].map(literal).join(', ')
  await sql.unsafe(`PREPARE deep AS ${stmt}`)
  const cost = async (mode: string) => {
    await sql.unsafe(`SET plan_cache_mode = ${mode}`)
    const [row] = await sql.unsafe(`EXPLAIN (FORMAT JSON) EXECUTE deep(${args})`)
    return (row!['QUERY PLAN'] as { Plan: { 'Total Cost': number } }[])[0]!.Plan['Total Cost']
  }
  t.equal(await cost('force_custom_plan'), await cost('force_generic_plan'), 'the plan for these values is the generic plan')
  await sql.unsafe('RESET plan_cache_mode')
  // postgres.js's own statements: not the SQL-level PREPARE deep above, which matches the same text
  // (the view's order is arbitrary, so taking the first row read the wrong one now and then).
  const plans = async (pattern: string) =>
    (await sql<{ generic: number; custom: number }[]>`
      SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
      WHERE statement LIKE ${pattern} AND statement LIKE '%LIMIT 21%' AND NOT from_sql`)[0]
  const plain = await plans('%(c.pinned, c.last_message_at, c.id) < ((SELECT%')
  t.ok(plain, 'the cursor statement was prepared')
  t.equal(plain!.custom, 5, 'five custom plans (PostgreSQL compares them with the generic one)')
  t.equal(plain!.generic, cursors.length - 5, 'then the generic plan for every other cursor')

  // A label filter keeps the workspace as a value: its plan depends on how common the label is there.
  await run('00000000-0000-4000-8000-000000000000')
  const labelled = await plans('%label_ids @>%')
  t.ok(labelled, 'the label statement was prepared')
  t.match(await sql`SELECT 1 FROM pg_prepared_statements WHERE statement LIKE '%label_ids @>%' AND statement LIKE '%c.workspace_id = $1%'`, [{}], 'the workspace is a plain value there')
})

/**
 * `?labelIds=` walks the open list's index and skips the rows without the label. The index carries
 * the columns that walk tests and returns (label_ids, team_id, priority_rank: migration 0024), so
 * on an all-visible table the page's keys come from the index alone, not one heap page per skipped
 * row (docs/lists.md, "Labels from the index").
 */
t.test('a label page reads its keys from the index, not the table', async (t) => {
  const { app, databaseUrl } = await build(t)
  const ws = await seedWorkspace(app)
  const [guest] = await insertConversations(app, ws, [{ lastMessageAt: BASE_US, createdAt: BASE_US }])
  const sql = createSql(databaseUrl, 1)
  t.teardown(() => sql.end())
  const label = '5d1c2b7e-4a3f-4c1d-9e8f-0a1b2c3d4e5f'
  // 5,000 open conversations, a third of them labelled: common enough that the planner walks the
  // list index rather than reading the label's posting list and sorting.
  await sql`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, last_message_at, created_at, updated_at, label_ids)
    SELECT gen_random_uuid(), ${ws.workspaceId}, ${ws.channelId}, ${guest!.guestId}, 'OPEN', at, at, at,
           CASE WHEN i % 3 = 0 THEN ARRAY[${label}::uuid] ELSE '{}'::uuid[] END
    FROM generate_series(1, 5000) i, LATERAL (SELECT now() - i * interval '1 second' AS at) x`
  await sql`VACUUM (ANALYZE) conversations`

  const r = resolveList('open', { workspaceId: ws.workspaceId, userId: ws.agent.userId }, { limit: 20, labelIds: label })
  const keys = await sectionQuery(sql, r, pageSections(r, undefined)[0]!, 21)
  t.equal(keys.length, 21, 'a full page of keys (and the one that says there is more)')
  // The route's statement, as postgres.js prepared it, explained with the same values.
  // (Not this look-up itself, which postgres.js prepares too and whose text holds the same words.)
  const [{ statement }] = await sql<{ statement: string }[]>`
    SELECT statement FROM pg_prepared_statements
    WHERE statement LIKE '%label_ids @>%' AND statement NOT LIKE '%pg_prepared_statements%' AND NOT from_sql`
  const params = Math.max(...[...statement.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))
  t.equal(params, 4, 'the workspace, the caller twice (private teams), the labels')
  await sql.unsafe(`PREPARE lbl AS ${statement}`)
  const args = [ws.workspaceId, ws.agent.userId, ws.agent.userId, `{${label}}`].map((v) => `'${v}'`).join(', ')
  const [row] = await sql.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lbl(${args})`)
  type Node = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; 'Heap Fetches'?: number; 'Actual Rows'?: number; Plans?: Node[] }
  const nodes = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(nodes)]
  const scans = nodes((row!['QUERY PLAN'] as { Plan: Node }[])[0]!.Plan).filter((n) => n['Relation Name'] === 'conversations')
  t.match(scans, [{ 'Node Type': 'Index Only Scan', 'Index Name': 'conv_open_last_msg_idx', 'Heap Fetches': 0, 'Actual Rows': 21 }], 'one index-only scan of the list index, no heap page')
})
