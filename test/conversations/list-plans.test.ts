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
