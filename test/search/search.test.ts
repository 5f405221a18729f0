import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { candidateQuery, readCandidates, resetSearchStats, SEARCH_WINDOW, searchesInFlight } from '../../src/search/search.js'
import { seedConversation, seedManyMessages, seedMessages } from './seed.js'

type Item = { id: string; match: string; guest: { name: string } }

t.test('search: messages and guests, ranked, scoped, highlighted, paginated', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const search = async (q: string, extra: Record<string, string> = {}, headers = ws.agent.headers) => {
    const qs = new URLSearchParams({ q, ...extra }).toString()
    return app.inject({ method: 'GET', url: `/conversations/search?${qs}`, headers })
  }

  const alice = await seedGuest(app, ws, 'Alice Wonder', 'alice@wonder.test')
  const bob = await seedGuest(app, ws, 'Bob Builder', 'bob@builder.test')
  const carol = await seedGuest(app, ws, 'Carol', 'carol@example.test')

  const refund = await seedConversation(app, ws, alice)
  await seedMessages(app, refund, [
    { body: 'Hi, I would like a refund for order 42' },
    { body: 'A refund? Sure, refund started.', senderType: 'AGENT' },
  ])
  const shipping = await seedConversation(app, ws, bob)
  await seedMessages(app, shipping, [{ body: 'Where is my parcel? Shipping takes ages, maybe a refund then' }])
  const closed = await seedConversation(app, ws, carol, { status: 'RESOLVED' })
  await seedMessages(app, closed, [{ body: 'Old closed chat about the <b>warranty</b> & stuff' }])
  const deleted = await seedConversation(app, ws, carol, { deleted: true })
  await seedMessages(app, deleted, [{ body: 'refund warranty secret deleted' }])

  // Another workspace with the same words never shows up.
  const other = await seedWorkspace(app, 'Other')
  const stranger = await seedGuest(app, other, 'Alice Other', 'alice@other.test')
  const foreign = await seedConversation(app, other, stranger)
  await seedMessages(app, foreign, [{ body: 'refund refund refund warranty' }])

  await t.test('message text: best match first, deleted and other workspaces absent, highlighted and escaped', async (t) => {
    const r1 = await search('refund')
    t.equal(r1.statusCode, 200)
    const ids1 = r1.json().data.map((i: Item) => i.id)
    t.same(ids1, [refund, shipping], 'best match first, deleted and other workspaces absent')
    t.equal(r1.json().nextCursor, null)
    const first = r1.json().data[0]
    t.match(first.match, /<mark>refund<\/mark>/i)
    t.equal(first.guest.name, 'Alice Wonder')
    t.equal(first.status, 'OPEN')

    const closedHit = await search('warranty')
    t.same(closedHit.json().data.map((i: Item) => i.id), [closed], 'resolved conversations are searched too')
    const m = closedHit.json().data[0].match as string
    t.match(m, /<mark>warranty<\/mark>/)
    t.notOk(/<b>/.test(m), 'no raw markup from the body')
    t.ok(m.includes('&#38;'), 'the rest is HTML-escaped')
  })

  await t.test("guests' names and e-mails by substring; websearch syntax (AND, or, phrase, negation)", async (t) => {
    // Guest name / e-mail substrings (3+ chars), exact names first.
    const byName = await search('wonder')
    t.same(byName.json().data.map((i: Item) => i.id), [refund])
    t.match(byName.json().data[0].match, /<mark>Wonder<\/mark>/)
    const byEmail = await search('builder.te')
    t.same(byEmail.json().data.map((i: Item) => i.id), [shipping])
    t.match(byEmail.json().data[0].match, /bob@<mark>builder\.te<\/mark>st/)
    const carolOnly = await search('Carol')
    t.same(carolOnly.json().data.map((i: Item) => i.id), [closed], "the guest's deleted conversation stays out")
    const combined = await search('refund order')
    t.same(combined.json().data.map((i: Item) => i.id), [refund], 'both words must match one message (websearch AND)')
    const orQuery = await search('parcel or warranty')
    t.same(orQuery.json().data.map((i: Item) => i.id).sort(), [closed, shipping].sort(), 'websearch syntax: or')
    const phrase = await search('"refund started"')
    t.same(phrase.json().data.map((i: Item) => i.id), [refund], 'websearch syntax: phrase')
    const negated = await search('refund -parcel')
    t.same(negated.json().data.map((i: Item) => i.id), [refund], 'websearch syntax: negation')
  })

  await t.test('q, limit and cursor are validated (400 VALIDATION_ERROR, INVALID_CURSOR)', async (t) => {
    // Validation of q, limit and cursor.
    for (const q of ['x', 'y'.repeat(201)]) {
      const bad = await search(q)
      t.equal(bad.statusCode, 400, `q of ${q.length} chars`)
      t.equal(bad.json().code, 'VALIDATION_ERROR')
      t.match(bad.json().message, /q/)
    }
    const missing = await app.inject({ method: 'GET', url: '/conversations/search', headers: ws.agent.headers })
    t.equal(missing.statusCode, 400)
    t.equal((await search('refund', { limit: '0' })).statusCode, 400)
    t.equal((await search('refund', { limit: '101' })).statusCode, 400)
    const tampered = await search('refund', { cursor: 'abc.def' })
    t.equal(tampered.statusCode, 400)
    t.equal(tampered.json().code, 'INVALID_CURSOR')
  })

  await t.test('members only (401 anonymous or visitor); each workspace searches its own', async (t) => {
    // Who may search.
    const anon = await app.inject({ method: 'GET', url: '/conversations/search?q=refund' })
    t.equal(anon.statusCode, 401)
    const visitor = await app.inject({ method: 'GET', url: '/conversations/search?q=refund', headers: alice.headers })
    t.equal(visitor.statusCode, 401, 'visitors cannot search')
    const otherTenant = await search('refund', {}, other.owner.headers)
    t.same(otherTenant.json().data.map((i: Item) => i.id), [foreign])
    // Guest names and e-mails too: the other workspace's guest is found there only.
    t.same((await search('other.test')).json().data, [], "another workspace's guest e-mail matches nothing here")
    t.same((await search('Alice Other')).json().data, [], "nor its guest's name")
    t.same((await search('other.test', {}, other.owner.headers)).json().data.map((i: Item) => i.id), [foreign], 'it does there')
  })
})

t.test('search: query text is data', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws, "O'Brien \\ 100%_done", 'ob@example.test')
  const conv = await seedConversation(app, ws, guest)
  await seedMessages(app, conv, [{ body: 'Ünïcödé café 😀 日本語 naïve' }])
  const decoy = await seedGuest(app, ws, 'Plain Name', 'plain@example.test')
  await seedConversation(app, ws, decoy)

  const hostile = [
    "'; DROP TABLE messages; --",
    "O'Brien",
    'back\\slash',
    '\\\\',
    '& | ! : * ( )',
    '!!',
    ':*',
    'a:* & !b | (c <-> d)',
    '"unterminated',
    '((((',
    '%%%',
    '___',
    '100%_',
    '😀😀',
    'Ünïcödé',
    '日本語',
    'x'.repeat(200),
  ]
  for (const q of hostile) {
    const res = await app.inject({
      method: 'GET',
      url: `/conversations/search?q=${encodeURIComponent(q)}`,
      headers: ws.agent.headers,
    })
    t.equal(res.statusCode, 200, `q=${JSON.stringify(q)}`)
  }
  const nul = await app.inject({ method: 'GET', url: `/conversations/search?q=${encodeURIComponent('\u0000nul\u0000')}`, headers: ws.agent.headers })
  t.equal(nul.statusCode, 400, 'NUL (which Postgres text cannot hold) is refused like on every route')
  const ids = async (q: string) =>
    (
      await app.inject({ method: 'GET', url: `/conversations/search?q=${encodeURIComponent(q)}`, headers: ws.agent.headers })
    ).json().data.map((i: Item) => i.id)
  t.same(await ids('%%%'), [], 'LIKE wildcards are literal, not match-all')
  t.same(await ids('___'), [])
  t.same(await ids('100%_'), [conv], 'a literal % and _ in a name match')
  t.same(await ids("O'Brien"), [conv])
  t.same(await ids('ünïcödé'), [conv], 'unicode, case-insensitive')
  t.same(await ids('日本語'), [conv])
  const count = await app.deps.sql`SELECT count(*)::int AS n FROM messages`
  t.equal(count[0]!.n, 1, 'nothing was dropped')

  // The highlight markers cannot be forged from a message body.
  const forger = await seedConversation(app, ws, decoy)
  await seedMessages(app, forger, [{ body: '\uE000fake\uE001 <mark>also fake</mark> marker' }])
  const res = await app.inject({ method: 'GET', url: '/conversations/search?q=marker', headers: ws.agent.headers })
  const match: string = res.json().data[0].match
  t.equal(match.match(/<mark>/g)?.length, 1, match)
  t.ok(match.endsWith('<mark>marker</mark>'))
  t.notOk(match.includes('<mark>also'), 'tags in the body are never markup (ts_headline drops them)')
})

t.test('search: cursor pagination visits every match once, in rank order', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const expected: string[] = []
  for (let i = 0; i < 23; i++) {
    const g = await seedGuest(app, ws, `Guest ${i}`, `g${i}@example.test`)
    const c = await seedConversation(app, ws, g)
    // Varying term frequency gives varying ranks, with ties among equal ones.
    await seedMessages(app, c, [{ body: `${'ticket '.repeat((i % 4) + 1)}number ${i}` }])
    expected.push(c)
  }
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const qs: string = new URLSearchParams({ q: 'ticket', limit: '5', ...(cursor ? { cursor } : {}) }).toString()
    const res: { statusCode: number; json(): { data: Item[]; nextCursor: string | null } } = await app.inject({ method: 'GET', url: `/conversations/search?${qs}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    const body: { data: Item[]; nextCursor: string | null } = res.json()
    seen.push(...body.data.map((i: Item) => i.id))
    // The excerpt is computed in the search statement for the page rows: every one has it.
    for (const i of body.data) t.match(i.match, /<mark>ticket<\/mark>/, 'excerpt on every page row')
    pages++
    cursor = body.nextCursor
    if (pages === 1) {
      const reused = await app.inject({
        method: 'GET',
        url: `/conversations/search?${new URLSearchParams({ q: 'other', cursor: body.nextCursor ?? '' })}`,
        headers: ws.agent.headers,
      })
      t.equal(reused.statusCode, 400, 'a cursor is bound to its query')
      t.equal(reused.json().code, 'INVALID_CURSOR')
    }
  } while (cursor && pages < 10)
  t.equal(pages, 5)
  t.equal(seen.length, 23)
  t.same([...seen].sort(), [...expected].sort(), 'every match exactly once')
  const all = await app.inject({ method: 'GET', url: '/conversations/search?q=ticket&limit=100', headers: ws.agent.headers })
  t.same(seen, all.json().data.map((i: Item) => i.id), 'pages follow the one ranked order')
  // More repetitions of the word rank higher: the top hits say it four times.
  t.match(all.json().data[0].match, /(<mark>ticket<\/mark> ){3}<mark>ticket<\/mark>/)
})

t.test('search: newest-first windows of candidates, each ranked; pages cross windows exactly once', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  // 2.5 windows of conversations saying "hello", created oldest first, with varying ranks.
  const n = Math.floor(SEARCH_WINDOW * 2.5)
  const byAge: string[] = []
  const g = await seedGuest(app, ws, 'Guest', 'guest@example.test')
  for (let i = 0; i < n; i++) {
    const c = await seedConversation(app, ws, g)
    await seedMessages(app, c, [{ body: `${'hello '.repeat((i % 3) + 1)}number${i}` }, { body: 'plain text' }])
    byAge.push(c)
  }
  const deleted = await seedConversation(app, ws, g, { deleted: true })
  await seedMessages(app, deleted, [{ body: 'hello from a deleted one' }])
  const og = await seedGuest(app, other, 'Stranger', 'stranger@example.test')
  const foreign = await seedConversation(app, other, og)
  await seedMessages(app, foreign, [{ body: 'hello hello hello from another tenant' }])

  const page = async (q: string, limit: number, cursor: string | null) => {
    const qs = new URLSearchParams({ q, limit: String(limit), ...(cursor ? { cursor } : {}) }).toString()
    const res = await app.inject({ method: 'GET', url: `/conversations/search?${qs}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    return res.json() as { data: Item[]; nextCursor: string | null }
  }
  const all = async (q: string, limit: number) => {
    const seen: Item[] = []
    let cursor: string | null = null
    for (let i = 0; i < 100; i++) {
      const body = await page(q, limit, cursor)
      seen.push(...body.data)
      cursor = body.nextCursor
      if (!cursor) break
    }
    return seen
  }
  const before = await all('hello', 7)
  const ids = before.map((i) => i.id)
  t.equal(ids.length, n, 'every live match of the workspace, deleted and foreign absent')
  t.equal(new Set(ids).size, n, 'no conversation twice')
  // Window k holds the k-th SEARCH_WINDOW newest conversations, ranked inside.
  // Newest by last message (what a chunk is ordered by; seedMessages' messages can interleave).
  // The deleted conversation (the newest) takes a candidate's place in the first window.
  const newestFirst = (
    await app.deps.sql<{ id: string }[]>`
      SELECT id FROM conversations WHERE id = ANY(${[...byAge, deleted]}::uuid[]) ORDER BY last_message_at DESC, id DESC`
  ).map((r) => r.id)
  let from = 0
  for (let w = 0; w * SEARCH_WINDOW < n + 1; w++) {
    const expected = newestFirst.slice(w * SEARCH_WINDOW, (w + 1) * SEARCH_WINDOW).filter((id) => id !== deleted)
    const got = ids.slice(from, from + expected.length)
    from += expected.length
    t.same([...got].sort(), expected.sort(), `window ${w}: the next newest candidates`)
    const counts = got.map((id) => (byAge.indexOf(id) % 3) + 1)
    t.same(counts, [...counts].sort((a, b) => b - a), `window ${w}: best matches first`)
  }
  for (const i of before) t.match(i.match, /<mark>hello<\/mark>/)
  t.same((await all('hello', 100)).map((i) => i.id), ids, 'pages of 100 give the same order as pages of 7')

  // Statistics make the word frequent in this workspace: search walks newest-first instead of
  // reading the posting list; the pages do not change.
  resetSearchStats(app.deps.searchSql)
  t.equal((await candidateQuery(app.deps.searchSql, ws.workspaceId, 'hello', null)).plan, 'period', 'no statistics: the period plan')
  await app.deps.sql`ANALYZE search_chunks`
  resetSearchStats(app.deps.searchSql)
  t.equal((await candidateQuery(app.deps.searchSql, ws.workspaceId, 'hello', null)).plan, 'walk', 'after ANALYZE: the walk')
  t.equal((await candidateQuery(app.deps.searchSql, ws.workspaceId, 'number7', null)).plan, 'period', 'a rare word: the period plan')
  t.same((await all('hello', 7)).map((i) => i.id), ids, 'same pages on the walk')
  t.same((await all('hello', 100)).map((i) => i.id), ids)

  // A phrase / negation that the chunk documents cannot decide is checked on the messages.
  t.same((await all('"number7"', 100)).map((i) => i.id), [byAge[7]])
  t.same((await all('"plain hello"', 100)).map((i) => i.id), [], 'words of two messages are no phrase')
  t.same((await all('hello plain', 100)).map((i) => i.id), [], 'both words in one message (AND)')
  t.equal((await all('hello -number7', 100)).length, n - 1)
  t.equal((await all('-zanzibar', 100)).length, n, 'an all-negative query matches every message without the word')
})

t.test('search: the period plan reads recent periods first; every window the same as the posting list and the walk', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const g = await seedGuest(app, ws, 'Guest', 'guest@example.test')
  // 600 one-chunk conversations over the last ~200 days (a new one every 8 hours, two at each
  // time: ties at every window edge), so they fall in 7-8 periods of 30 days. `spread` is in every
  // 6th (100), `oldish` only in the 300 oldest (none in the two newest periods: the rest of the
  // posting list must answer), `pair` in the even ones among the 60 newest (30: fewer than a window,
  // so the first page takes periods and the rest), `tail` in one conversation 90 days ago,
  // `halfway` in every odd one.
  const n = 600
  await app.deps.sql`
    WITH c AS (
      INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, last_message_at)
      SELECT gen_random_uuid(), ${ws.workspaceId}, ${ws.channelId}, ${g.guestId}, 'OPEN',
             now() - interval '200 days' + make_interval(hours => (i / 2) * 16)
      FROM generate_series(0, ${n - 1}) AS i
      RETURNING id, workspace_id, guest_id, last_message_at)
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    SELECT gen_random_uuid(), c.workspace_id, c.id, 'GUEST', c.guest_id::text, 'Gina Guest',
           concat_ws(' ', 'text',
                     CASE WHEN i % 6 = 0 THEN repeat('spread ', (i % 3 + 1)::int) END,
                     CASE WHEN i < 300 AND i % 3 = 0 THEN repeat('oldish ', (i % 4 + 1)::int) END,
                     CASE WHEN i >= ${n - 60} AND i % 2 = 0 THEN repeat('pair ', (i % 5 + 1)::int) END,
                     CASE WHEN i = 330 THEN 'tail' END,
                     CASE WHEN i % 2 = 1 THEN 'halfway' END),
           c.last_message_at
    FROM (SELECT *, row_number() OVER (ORDER BY last_message_at, id) - 1 AS i FROM c) c`
  // A long conversation saying `spread` in an old chunk and in its newest: found once, at its newest.
  const long = await seedConversation(app, ws, g)
  await seedMessages(app, long, [{ body: 'spread early' }])
  await seedManyMessages(app, long, 40)
  await seedMessages(app, long, [{ body: 'spread late' }])
  // A chunk that moves to a later period: its first message 150 days ago says `moved`, the next
  // one (same chunk) is new, so the chunk now belongs to this period and must be found there.
  const moved = await seedConversation(app, ws, g)
  await app.deps.sql`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    VALUES (gen_random_uuid(), ${ws.workspaceId}, ${moved}, 'GUEST', ${g.guestId}, 'Gina Guest', 'moved spread', now() - interval '150 days')`
  await seedMessages(app, moved, [{ body: 'a later word' }])
  // A message from a clock 70 days ahead (a later period than now's): still first.
  const ahead = await seedConversation(app, ws, g)
  await app.deps.sql`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    VALUES (gen_random_uuid(), ${ws.workspaceId}, ${ahead}, 'GUEST', ${g.guestId}, 'Gina Guest', 'spread pair ahead', now() + interval '70 days')`
  const deleted = await seedConversation(app, ws, g, { deleted: true })
  await seedMessages(app, deleted, [{ body: 'spread pair in a deleted one' }])

  const [moves] = await app.deps.sql<{ seq: number; fresh: boolean; found: boolean }[]>`
    SELECT seq, last_message_at > now() - interval '1 hour' AS fresh,
           doc @@ search_query_in(workspace_id, 'moved', search_period(last_message_at)) AS found
    FROM search_chunks WHERE conversation_id = ${moved}`
  t.same(moves, { seq: 0, fresh: true, found: true }, 'the chunk that took a new message is tagged with its new period')

  // Every window of each word, by each plan forced, walked back to the end: identical rows.
  const windows = async (w: string, plan: 'list' | 'period' | 'walk') => {
    const out: { id: string; at: string; seq: number }[][] = []
    let window: { id: string; at: string; seq: number } | null = null
    for (;;) {
      const rows = await readCandidates(app.deps.searchSql, app.deps.searchSql, ws.workspaceId, w, window, { plan })
      if (rows.length === 0) return out
      out.push(rows)
      window = rows[rows.length - 1]!
    }
  }
  for (const w of ['text', 'spread', 'oldish', 'pair', 'tail', 'moved', 'halfway', 'spread -pair', 'pair or oldish', '-spread']) {
    const list = await windows(w, 'list')
    t.ok(list.length > 0, `${w}: has candidates`)
    t.same(await windows(w, 'period'), list, `${w}: the period plan's windows are the posting list's`)
    t.same(await windows(w, 'walk'), list, `${w}: and the walk's`)
  }
  const spread = (await windows('spread', 'period')).flat().map((r) => r.id)
  t.equal(spread[0], ahead, 'the chunk of a later period comes first')
  t.ok(spread.includes(moved), 'the moved chunk is found')
  t.equal(spread.filter((id) => id === long).length, 1, 'the long conversation once')

  // By HTTP (the plan search chooses: period without statistics), every live match once.
  const all = async (q: string, limit: number) => {
    const seen: string[] = []
    let cursor: string | null = null
    for (let i = 0; i < 200; i++) {
      const qs = new URLSearchParams({ q, limit: String(limit), ...(cursor ? { cursor } : {}) }).toString()
      const res = await app.inject({ method: 'GET', url: `/conversations/search?${qs}`, headers: ws.agent.headers })
      if (res.statusCode !== 200) t.fail(`${q}: ${res.statusCode} ${res.body}`)
      const body = res.json() as { data: Item[]; nextCursor: string | null }
      seen.push(...body.data.map((i) => i.id))
      cursor = body.nextCursor
      if (!cursor) break
    }
    return seen
  }
  const matching = async (w: string) =>
    (
      await app.deps.sql<{ id: string }[]>`
        SELECT DISTINCT m.conversation_id AS id FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE c.workspace_id = ${ws.workspaceId} AND c.deleted_at IS NULL AND m.search @@ websearch_to_tsquery('simple', ${w})`
    ).map((r) => r.id)
  resetSearchStats(app.deps.searchSql)
  for (const w of ['spread', 'oldish', 'pair', 'moved']) {
    t.equal((await candidateQuery(app.deps.searchSql, ws.workspaceId, w, null)).plan, 'period', `${w}: no statistics, the period plan`)
    const pages = await all(w, 7)
    t.same([...pages].sort(), (await matching(w)).sort(), `${w}: every live match once`)
    t.same(await all(w, 100), pages, `${w}: pages of 100 in the same order as pages of 7`)
  }
  t.equal((await candidateQuery(app.deps.searchSql, ws.workspaceId, '-spread', null)).plan, 'walk', 'only negations: the walk')

  // With statistics the choice weighs the rows each plan reads: a walk SEARCH_WINDOW / share chunks,
  // the period plan the word's share of a period (~90 chunks here, the history ~7 periods long).
  await app.deps.sql`ANALYZE search_chunks`
  resetSearchStats(app.deps.searchSql)
  t.equal((await candidateQuery(app.deps.searchSql, ws.workspaceId, 'text', null)).plan, 'walk', 'a word in every chunk: the walk')
  t.equal(
    (await candidateQuery(app.deps.searchSql, ws.workspaceId, 'halfway', null)).plan,
    'period',
    'a word in half of them: its posting list in a period (~45 rows) is shorter than a walk to 50 of them (~100 chunks)',
  )
  const halfway = await all('halfway', 50)
  t.same([...halfway].sort(), (await matching('halfway')).sort(), 'halfway: every live match once')
})

t.test('search: long conversations are chunked; an old message is found, the conversation once', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const g = await seedGuest(app, ws, 'Guest', 'guest@example.test')
  const long = await seedConversation(app, ws, g)
  await seedMessages(app, long, [{ body: 'the first message mentions zanzibar' }])
  await seedManyMessages(app, long, 70)
  await seedMessages(app, long, [{ body: 'and the last one zanzibar too' }])
  const chunks = await app.deps.sql<{ seq: number; messages: number }[]>`
    SELECT seq, messages FROM search_chunks WHERE conversation_id = ${long} ORDER BY seq`
  t.same(chunks.map((c) => c.messages).reduce((a, b) => a + b, 0), 72, 'every message in a chunk')
  t.ok(chunks.length >= 3, `several chunks (${chunks.length})`)
  const short = await seedConversation(app, ws, g)
  await seedMessages(app, short, [{ body: 'zanzibar again' }])
  const res = await app.inject({ method: 'GET', url: '/conversations/search?q=zanzibar', headers: ws.agent.headers })
  t.same(res.json().data.map((i: Item) => i.id).sort(), [long, short].sort(), 'the long conversation once')
  const first = await app.inject({ method: 'GET', url: '/conversations/search?q=first%20mentions', headers: ws.agent.headers })
  t.same(first.json().data.map((i: Item) => i.id), [long], 'a message in the oldest chunk is found')
  t.match(first.json().data[0].match, /<mark>first<\/mark> <mark>message<\/mark> <mark>mentions<\/mark>|<mark>first<\/mark>/)
  const numbered = await app.inject({ method: 'GET', url: '/conversations/search?q=message%2040', headers: ws.agent.headers })
  t.same(numbered.json().data.map((i: Item) => i.id), [long])
  t.match(numbered.json().data[0].match, /<mark>40<\/mark>/)
  // Deleting the conversation removes its chunks.
  await app.deps.sql`DELETE FROM conversations WHERE id = ${long}`
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM search_chunks WHERE conversation_id = ${long}`
  t.equal(n, 0)
})

t.test('search: guests first, then messages; a guest match is not repeated among message matches', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const exact = await seedGuest(app, ws, 'Kowalski', 'k@example.test')
  const partial = await seedGuest(app, ws, 'Anna Kowalski', 'anna@example.test')
  const plain = await seedGuest(app, ws, 'Plain', 'plain@example.test')
  const a = await seedConversation(app, ws, partial)
  await seedMessages(app, a, [{ body: 'kowalski wrote this' }])
  const b = await seedConversation(app, ws, exact)
  const c = await seedConversation(app, ws, plain)
  await seedMessages(app, c, [{ body: 'ask kowalski about it' }])
  const seen: string[] = []
  let cursor: string | null = null
  for (let i = 0; i < 5; i++) {
    const qs: string = new URLSearchParams({ q: 'kowalski', limit: '1', ...(cursor ? { cursor } : {}) }).toString()
    const body: { data: Item[]; nextCursor: string | null } = (
      await app.inject({ method: 'GET', url: `/conversations/search?${qs}`, headers: ws.agent.headers })
    ).json()
    seen.push(...body.data.map((x) => x.id))
    cursor = body.nextCursor
    if (!cursor) break
  }
  t.same(seen, [b, a, c], 'exact guest, guest substring, then the message match; each once')
  const one = await app.inject({ method: 'GET', url: '/conversations/search?q=kowalski&limit=10', headers: ws.agent.headers })
  const data: Item[] = one.json().data
  t.same(data.map((x) => x.id), [b, a, c])
  t.match(data[1]!.match, /<mark>kowalski<\/mark> wrote/, 'a guest hit with a matching message shows the message')
  t.match(data[0]!.match, /<mark>Kowalski<\/mark>/)
})

t.test('search: guest hits count conversations; guests without a live one do not use up the cap', async (t) => {
  const { app } = await build(t, { env: { SEARCH_CANDIDATE_LIMIT: '100' } })
  const ws = await seedWorkspace(app)
  // 100 matching guests first (the guests table's order): one with a deleted conversation, the
  // others with none. Read alone, the first `cap` guests are these; their conversations are not.
  const gone = await seedGuest(app, ws, 'Quillon Gone', 'gone@example.test')
  const deleted = await seedConversation(app, ws, gone)
  t.equal((await app.inject({ method: 'DELETE', url: `/conversations/${deleted}`, headers: ws.admin.headers })).statusCode, 204)
  await app.deps.sql`
    INSERT INTO guests (id, workspace_id, channel_id, name, email)
    SELECT gen_random_uuid(), ${ws.workspaceId}, ${ws.channelId}, 'Quillon ' || i, 'q' || i || '@example.test' FROM generate_series(1, 99) i`
  const live = await seedGuest(app, ws, 'Quillon Live', 'live@example.test')
  const a = await seedConversation(app, ws, live)
  const b = await seedConversation(app, ws, live)
  const res = await app.inject({ method: 'GET', url: '/conversations/search?q=quillon&limit=10', headers: ws.agent.headers })
  t.equal(res.statusCode, 200)
  t.same(
    (res.json().data as Item[]).map((x) => x.id).sort(),
    [a, b].sort(),
    'both live conversations of the guest beyond the first 100, none deleted',
  )
  const [hit] = res.json().data as Item[]
  t.match(hit!.match, /<mark>Quillon<\/mark> Live/)
})

t.test('search: when the guest phase showed nobody, a guest renamed between pages does not hide its message match', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const ids: string[] = []
  for (const name of ['Ann', 'Ben', 'Cid']) {
    const guest = await seedGuest(app, ws, name, `${name.toLowerCase()}@example.test`)
    const id = await seedConversation(app, ws, guest)
    await seedMessages(app, id, [{ body: `a zebrafinch story from ${name}` }])
    ids.push(id)
  }
  const page = async (cursor: string | null) => {
    const qs = new URLSearchParams({ q: 'zebrafinch', limit: '1', ...(cursor ? { cursor } : {}) }).toString()
    const res = await app.inject({ method: 'GET', url: `/conversations/search?${qs}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    return res.json() as { data: Item[]; nextCursor: string | null }
  }
  const first = await page(null)
  t.equal(first.data.length, 1, 'page 1: a message match (no guest is called zebrafinch)')
  // Every guest now matches the text: the guest phase is over for this search and showed none of
  // them, so the later pages must not leave them out as "shown already".
  await app.deps.sql`UPDATE guests SET name = 'Zebrafinch ' || name WHERE workspace_id = ${ws.workspaceId}`
  const seen = first.data.map((x) => x.id)
  let cursor = first.nextCursor
  for (let i = 0; cursor && i < 5; i++) {
    const next = await page(cursor)
    seen.push(...next.data.map((x) => x.id))
    cursor = next.nextCursor
  }
  t.same([...seen].sort(), [...ids].sort(), 'every message match once, across the pages')
  const fresh = await page(null)
  t.match(fresh.data[0]!.guest.name, /^Zebrafinch /, 'a new search shows them by guest first')
})

t.test('search: a message-phase cursor from before shownGuests still leaves guest matches out; a bad flag is INVALID_CURSOR', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const named = await seedGuest(app, ws, 'Zed Quillfeather', 'zed@example.test')
  const plain = await seedGuest(app, ws, 'Plain', 'plain@example.test')
  const byGuest = await seedConversation(app, ws, named)
  await seedMessages(app, byGuest, [{ body: 'quillfeather here' }])
  const byMessage = await seedConversation(app, ws, plain)
  await seedMessages(app, byMessage, [{ body: 'ask about the quillfeather' }])
  const get = (cursor: string) =>
    app.inject({ method: 'GET', url: `/conversations/search?q=quillfeather&limit=10&cursor=${encodeURIComponent(cursor)}`, headers: ws.agent.headers })
  // The cursor's params, from a genuine cursor of this query.
  const first = await app.inject({ method: 'GET', url: '/conversations/search?q=quillfeather&limit=1', headers: ws.agent.headers })
  const genuine: string = first.json().nextCursor
  const { p } = JSON.parse(Buffer.from(genuine.split('.')[0]!, 'base64url').toString('utf8')) as { p: Record<string, string> }
  const start = ['m', null, null, null, null, null]
  const ids = async (cursor: string) => {
    const res = await get(cursor)
    t.equal(res.statusCode, 200)
    return (res.json().data as Item[]).map((x) => x.id).sort()
  }
  t.same(await ids(app.deps.cursor.encode(p, start)), [byMessage], 'six parts (issued before): the guest match is left out, as it was')
  t.same(await ids(app.deps.cursor.encode(p, [...start, 1])), [byMessage], 'guests shown: left out')
  t.same(await ids(app.deps.cursor.encode(p, [...start, 0])), [byGuest, byMessage].sort(), 'no guest shown: nothing left out')
  for (const flag of [2, '1', null]) {
    const res = await get(app.deps.cursor.encode(p, [...start, flag]))
    t.equal(res.statusCode, 400, `flag ${JSON.stringify(flag)}`)
    t.equal(res.json().code, 'INVALID_CURSOR')
  }
})

t.test('search runs on its own pool: a busy search pool does not hold up the inbox', async (t) => {
  const { app } = await build(t, { env: { DATABASE_SEARCH_POOL_MAX: '1' } })
  const ws = await seedWorkspace(app)
  const g = await seedGuest(app, ws, 'Guest', 'guest@example.test')
  const c = await seedConversation(app, ws, g)
  await seedMessages(app, c, [{ body: 'hello there' }])
  t.not(app.deps.searchSql, app.deps.sql)
  // Occupy the search pool's only connection until released: it waits for a lock held elsewhere.
  const holder = await app.deps.sql.reserve()
  await holder`SELECT pg_advisory_lock(1919)`
  const blocker = app.deps.searchSql`SELECT pg_advisory_lock(1919), pg_advisory_unlock(1919)`.then(() => 'released')
  let searchDone = false
  const search = app
    .inject({ method: 'GET', url: '/conversations/search?q=hello', headers: ws.agent.headers })
    .then((r) => {
      searchDone = true
      return r
    })
  const list = await app.inject({ method: 'GET', url: '/conversations', headers: ws.agent.headers })
  t.equal(list.statusCode, 200, 'the list answers while the search pool is busy')
  t.notOk(searchDone, 'the search waits for its own pool')
  await holder`SELECT pg_advisory_unlock(1919)`
  holder.release()
  t.equal(await blocker, 'released')
  const res = await search
  t.equal(res.statusCode, 200)
  t.same(res.json().data.map((i: Item) => i.id), [c])
})

t.test('identical searches in flight share one execution, within one workspace only', async (t) => {
  const { app } = await build(t, { env: { DATABASE_SEARCH_POOL_MAX: '1' } })
  const ws = await seedWorkspace(app)
  const mine = await seedConversation(app, ws, await seedGuest(app, ws, 'Guest', 'guest@example.test'))
  await seedMessages(app, mine, [{ body: 'hello there' }])
  const other = await seedWorkspace(app, 'Other')
  const theirs = await seedConversation(app, other, await seedGuest(app, other, 'Stranger', 'stranger@example.test'))
  await seedMessages(app, theirs, [{ body: 'hello from elsewhere' }])
  const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url, headers })
  const inFlight = async (n: number) => {
    for (let i = 0; i < 500 && searchesInFlight(app.deps.searchSql) !== n; i++) await new Promise((r) => setTimeout(r, 10))
    return searchesInFlight(app.deps.searchSql)
  }

  // Hold the search pool's only connection, so the searches below are all in flight at once.
  const holder = await app.deps.sql.reserve()
  await holder`SELECT pg_advisory_lock(1920)`
  // (then: a postgres.js query is sent only once someone waits for it)
  const blocker = app.deps.searchSql`SELECT pg_advisory_lock(1920), pg_advisory_unlock(1920)`.then(() => 'released')
  const first = get('/conversations/search?q=hello', ws.agent.headers)
  t.equal(await inFlight(1), 1, 'the first search is being computed')
  const joined = get('/conversations/search?q=hello', ws.admin.headers)
  const otherPage = get('/conversations/search?q=hello&limit=5', ws.agent.headers)
  const otherWorkspace = get('/conversations/search?q=hello', other.agent.headers)
  t.equal(await inFlight(3), 3, 'another member asking for the same page joins it; another page and another workspace do not')
  await holder`SELECT pg_advisory_unlock(1920)`
  holder.release()
  t.equal(await blocker, 'released')

  const [a, b, c, d] = await Promise.all([first, joined, otherPage, otherWorkspace])
  for (const r of [a, b, c, d]) t.equal(r.statusCode, 200)
  t.same(a.json().data.map((i: Item) => i.id), [mine])
  t.same(b.json(), a.json(), 'the member who joined gets the same page')
  t.same(c.json().data.map((i: Item) => i.id), [mine])
  t.same(d.json().data.map((i: Item) => i.id), [theirs], 'the same words in another workspace: its own search, its own data')
  t.equal(searchesInFlight(app.deps.searchSql), 0, 'nothing left in flight')

  // A failed search is not kept: the same bad cursor fails again, and a good request then works.
  const bad = await get('/conversations/search?q=hello&cursor=nope', ws.agent.headers)
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'INVALID_CURSOR')
  t.equal((await get('/conversations/search?q=hello', ws.agent.headers)).json().data.length, 1)
})

t.test('search: a guest name or e-mail holding the marker characters cannot forge a highlight', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const search = async (q: string) =>
    (await app.inject({ method: 'GET', url: `/conversations/search?${new URLSearchParams({ q })}`, headers: ws.agent.headers })).json()

  const byName = await seedGuest(app, ws, '\uE000Trusted\uE001 Forgerson', 'forger@example.test')
  const nameConv = await seedConversation(app, ws, byName)
  let res = await search('Forgerson')
  t.same(res.data.map((i: Item) => i.id), [nameConv])
  t.equal(res.data[0].match, 'Trusted <mark>Forgerson</mark>', 'only the hit is marked; the markers of the name are gone')

  // The hit in the e-mail: the name is not shown, the address's own markers are dropped.
  const byEmail = await seedGuest(app, ws, 'Quiet Guest', 'x\uE000y\uE001@mailforge.test')
  const emailConv = await seedConversation(app, ws, byEmail)
  res = await search('mailforge')
  t.same(res.data.map((i: Item) => i.id), [emailConv])
  t.equal(res.data[0].match, 'xy@<mark>mailforge</mark>.test')
  for (const item of res.data) t.notOk(/[\uE000\uE001]/.test(item.match), 'no marker character reaches the client')
})
