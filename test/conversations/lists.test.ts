import t from 'tap'
import { build, seedWorkspace, type SeededMember } from '../helper.js'
import { pageRows, resolveList } from '../../src/conversations/lists.js'
import { BASE_US, insertChannel, insertConversations, insertGuest } from './seed.js'

type Page = { data: Record<string, any>[]; nextCursor: string | null }

t.test('conversation lists', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other Co')
  const second = await insertChannel(app, ws.workspaceId)
  const guest = await insertGuest(app, ws, 'Grace Hopper')

  const get = async (url: string, member: SeededMember = ws.agent) => app.inject({ method: 'GET', url, headers: member.headers })
  const ids = (res: { json(): unknown }) => (res.json() as Page).data.map((c) => c.id)

  // Named rows with chosen times (µs after BASE_US). Open ones:
  const [oldPinned, newest, middle, oldest, unreadOther, tieA, tieB] = await insertConversations(app, ws, [
    { pinned: true, lastMessageAt: BASE_US + 10, createdAt: BASE_US + 10, guestId: guest },
    { lastMessageAt: BASE_US + 500, createdAt: BASE_US + 1, unreadCount: 2, assignedAgentId: ws.agent.userId, lastMessagePreview: 'hello' },
    { lastMessageAt: BASE_US + 300, createdAt: BASE_US + 3 },
    { lastMessageAt: BASE_US + 100, createdAt: BASE_US + 4, assignedAgentId: ws.admin.userId },
    { lastMessageAt: BASE_US + 200, createdAt: BASE_US + 5, unreadCount: 1, channelId: second },
    // Two rows one microsecond apart: a millisecond cursor would lose one of them.
    { lastMessageAt: BASE_US + 400_001, createdAt: BASE_US + 6 },
    { lastMessageAt: BASE_US + 400_000, createdAt: BASE_US + 7 },
  ])
  // Not in the open list: resolved, legacy closed, deleted, another workspace.
  const [resolvedMine, legacyClosed, legacyNoClosedAt, resolvedOld] = await insertConversations(app, ws, [
    { status: 'RESOLVED', closedAt: BASE_US + 900, assignedAgentId: ws.agent.userId, pinned: true },
    { status: 'CLOSED', closedAt: BASE_US + 800 },
    { status: 'CLOSED', closedAt: null },
    { status: 'RESOLVED', closedAt: BASE_US + 50, lastMessageAt: BASE_US + 999_999 },
  ])
  const [deleted] = await insertConversations(app, ws, [
    { deletedAt: BASE_US, lastMessageAt: BASE_US + 1_000_000, assignedAgentId: ws.agent.userId },
    { status: 'RESOLVED', deletedAt: BASE_US },
  ])
  const foreign = await insertConversations(app, other, [
    { lastMessageAt: BASE_US + 2_000_000, pinned: true },
    { status: 'RESOLVED' },
    { assignedAgentId: ws.agent.userId }, // same userId string, other tenant
  ])
  const foreignIds = foreign.map((c) => c.id)

  t.test('GET /conversations: open only, pinned first, then newest lastMessageAt', async (t) => {
    const res = await get('/conversations')
    t.equal(res.statusCode, 200)
    t.same(ids(res), [oldPinned!.id, tieA!.id, tieB!.id, newest!.id, middle!.id, unreadOther!.id, oldest!.id])
    t.equal(res.json().nextCursor, null)
    const item = res.json().data.find((c: any) => c.id === newest!.id)
    t.match(item, {
      workspaceId: ws.workspaceId,
      status: 'OPEN',
      pinned: false,
      assignedAgentId: ws.agent.userId,
      assignedAgent: { userId: ws.agent.userId, name: 'Agnes Agent' },
      seen: false,
      unreadCount: 2,
      lastMessagePreview: 'hello',
      lastMessageAt: '2026-11-21T10:00:00.000Z',
      closedAt: null,
    })
    t.match(res.json().data[0].guest, { id: guest, name: 'Grace Hopper' })
    for (const id of [deleted!.id, resolvedMine!.id, ...foreignIds]) t.notOk(ids(res).includes(id))
  })

  t.test('sortBy / sortOrder, pinned still first', async (t) => {
    const asc = await get('/conversations?sortBy=createdAt&sortOrder=asc')
    t.same(ids(asc), [oldPinned!.id, newest!.id, middle!.id, oldest!.id, unreadOther!.id, tieA!.id, tieB!.id])
    const desc = await get('/conversations?sortBy=createdAt')
    t.same(ids(desc), [oldPinned!.id, tieB!.id, tieA!.id, unreadOther!.id, oldest!.id, middle!.id, newest!.id])
    const upd = await get('/conversations?sortBy=updatedAt&sortOrder=asc&limit=100')
    t.equal(upd.statusCode, 200)
    t.equal(ids(upd)[0], oldPinned!.id)
  })

  t.test('filters: channelId, unassignedOnly, readStatus', async (t) => {
    t.same(ids(await get(`/conversations?channelId=${second}`)), [unreadOther!.id])
    t.same(ids(await get(`/conversations?channelId=${other.channelId}`)), [])
    t.same(ids(await get('/conversations?unassignedOnly=true')), [oldPinned!.id, tieA!.id, tieB!.id, middle!.id, unreadOther!.id])
    t.same(ids(await get('/conversations?unassignedOnly=false')).length, 7)
    t.same(ids(await get('/conversations?readStatus=unread')), [newest!.id, unreadOther!.id])
    t.same(ids(await get('/conversations?readStatus=read')), [oldPinned!.id, tieA!.id, tieB!.id, middle!.id, oldest!.id])
    t.same(ids(await get(`/conversations?readStatus=unread&channelId=${ws.channelId}`)), [newest!.id])
  })

  t.test('pages of one follow the same order, across the pinned boundary and a 1 µs tie', async (t) => {
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const res = await get(`/conversations?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      t.equal(res.statusCode, 200)
      const page = res.json() as Page
      seen.push(...page.data.map((c) => c.id))
      cursor = page.nextCursor
    } while (cursor && seen.length < 20)
    t.same(seen, [oldPinned!.id, tieA!.id, tieB!.id, newest!.id, middle!.id, unreadOther!.id, oldest!.id])
  })

  t.test('GET /conversations/Myconversation: assigned to the caller, any status, pinned first', async (t) => {
    t.same(ids(await get('/conversations/Myconversation')), [resolvedMine!.id, newest!.id])
    t.same(ids(await get('/conversations/Myconversation?status=OPEN')), [newest!.id])
    t.same(ids(await get('/conversations/Myconversation?status=RESOLVED')), [resolvedMine!.id])
    t.same(ids(await get('/conversations/Myconversation?status=CLOSED')), [resolvedMine!.id])
    t.same(ids(await get('/conversations/Myconversation', ws.admin)), [oldest!.id])
    t.same(ids(await get('/conversations/Myconversation', ws.owner)), [])
    // unassignedOnly and "mine" exclude each other: an empty list, not an error.
    t.same(ids(await get('/conversations/Myconversation?unassignedOnly=true')), [])
  })

  t.test('GET /conversations/closed: RESOLVED and legacy CLOSED, newest closedAt first', async (t) => {
    const res = await get('/conversations/closed')
    t.equal(res.statusCode, 200)
    // A legacy row without closedAt sorts as the oldest; closed lists are not pinned-first.
    t.same(ids(res), [resolvedMine!.id, legacyClosed!.id, resolvedOld!.id, legacyNoClosedAt!.id])
    t.same(ids(await get('/conversations/closed?sortOrder=asc')), [legacyNoClosedAt!.id, resolvedOld!.id, legacyClosed!.id, resolvedMine!.id])
    t.equal(ids(await get('/conversations/closed?sortBy=lastMessageAt'))[0], resolvedOld!.id)
    const statuses = (res.json() as Page).data.map((c) => c.status)
    t.same(statuses, ['RESOLVED', 'CLOSED', 'RESOLVED', 'CLOSED'])
    t.equal((res.json() as Page).data[3]!.closedAt, null)
    // Pages with a -infinity key in the cursor.
    const p1 = await get('/conversations/closed?limit=3&sortOrder=asc')
    const p2 = await get(`/conversations/closed?limit=3&sortOrder=asc&cursor=${p1.json().nextCursor}`)
    t.same([...ids(p1), ...ids(p2)], [legacyNoClosedAt!.id, resolvedOld!.id, legacyClosed!.id, resolvedMine!.id])
    t.equal(p2.json().nextCursor, null)
  })

  t.test('bad query parameters: 400 VALIDATION_ERROR naming the field', async (t) => {
    const cases: [string, string][] = [
      ['/conversations?limit=0', 'limit'],
      ['/conversations?limit=101', 'limit'],
      ['/conversations?limit=abc', 'limit'],
      ['/conversations?limit=2.5', 'limit'],
      ['/conversations?sortBy=closedAt', 'sortBy'],
      ['/conversations?sortBy=name', 'sortBy'],
      ['/conversations/Myconversation?sortBy=closedAt', 'sortBy'],
      ['/conversations?sortOrder=up', 'sortOrder'],
      ['/conversations?readStatus=maybe', 'readStatus'],
      ['/conversations?unassignedOnly=yes', 'unassignedOnly'],
      ['/conversations?channelId=not-a-uuid', 'channelId'],
      ['/conversations?cursor=', 'cursor'],
      ['/conversations?status=OPEN', 'status'],
      ['/conversations?workspaceId=x', 'workspaceId'],
      ['/conversations/Myconversation?status=WAITING', 'status'],
      ['/conversations/closed?limit=1000', 'limit'],
      ['/conversations/closed?sortBy=pinned', 'sortBy'],
    ]
    for (const [url, field] of cases) {
      const res = await get(url)
      t.equal(res.statusCode, 400, url)
      t.equal(res.json().code, 'VALIDATION_ERROR', url)
      t.match(res.json().message, field, url)
    }
  })

  t.test('cursors: tampered, garbage, or reused with other parameters are 400 INVALID_CURSOR', async (t) => {
    const first = await get('/conversations?limit=2&sortBy=createdAt&sortOrder=asc&readStatus=all')
    const cursor = first.json().nextCursor as string
    t.ok(cursor)
    t.equal((await get(`/conversations?limit=2&sortBy=createdAt&sortOrder=asc&cursor=${cursor}`)).statusCode, 200, 'valid, page size may change')
    const [payload, tag] = cursor.split('.')
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1)
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), k: [false, '1970-01-01 00:00:00+00', oldPinned!.id] }),
    ).toString('base64url')
    const bad = [
      `${flip(payload!, 5)}.${tag}`,
      `${payload}.${flip(tag!, 3)}`,
      `${forged}.${tag}`,
      `${payload}`,
      `${payload}.${tag}.x`,
      'garbage',
      '....',
      Buffer.from('{"p":{},"k":[]}').toString('base64url') + '.AAAA',
    ]
    for (const c of bad) {
      const res = await get(`/conversations?limit=2&sortBy=createdAt&sortOrder=asc&cursor=${encodeURIComponent(c)}`)
      t.equal(res.statusCode, 400, c)
      t.equal(res.json().code, 'INVALID_CURSOR', c)
    }
    const reused = [
      `/conversations?limit=2&sortBy=createdAt&sortOrder=desc`,
      `/conversations?limit=2&sortBy=lastMessageAt&sortOrder=asc`,
      `/conversations?limit=2&sortBy=createdAt&sortOrder=asc&readStatus=unread`,
      `/conversations?limit=2&sortBy=createdAt&sortOrder=asc&unassignedOnly=true`,
      `/conversations?limit=2&sortBy=createdAt&sortOrder=asc&channelId=${second}`,
      `/conversations/Myconversation?limit=2&sortBy=createdAt&sortOrder=asc`,
      `/conversations/closed?limit=2&sortBy=createdAt&sortOrder=asc`,
    ]
    for (const url of reused) {
      const res = await get(`${url}&cursor=${cursor}`)
      t.equal(res.statusCode, 400, url)
      t.equal(res.json().code, 'INVALID_CURSOR', url)
    }
    // Another workspace's member cannot replay it either.
    const res = await app.inject({ url: `/conversations?limit=2&sortBy=createdAt&sortOrder=asc&cursor=${cursor}`, headers: other.agent.headers })
    t.equal(res.json().code, 'INVALID_CURSOR')
    // A /Myconversation cursor is the caller's own.
    const mine = await get('/conversations/Myconversation?limit=1')
    const replay = await get(`/conversations/Myconversation?limit=1&cursor=${mine.json().nextCursor}`, ws.admin)
    t.equal(replay.statusCode, 400)
    t.equal(replay.json().code, 'INVALID_CURSOR')
  })

  // A label- or team-filtered page is its keys (one statement), then its rows by id (another): a row
  // deleted or moved into a hidden team between the two is left out, the others keep the keys'
  // order, and the key stays (the cursor is taken from keys, so the walk neither ends early nor repeats).
  t.test('page rows: a row gone since its key was read is left out, the rest in key order', async (t) => {
    const key = (id: string) => ({ id, pinned: false, sortValue: '', sortRank: 0 })
    const r = resolveList('open', { workspaceId: ws.workspaceId, userId: ws.agent.userId }, { limit: 20, teamId: 'none' })
    const rows = await pageRows(app.deps.sql, r, [
      key(middle!.id),
      key(deleted!.id),
      key(foreignIds[0]!),
      key(newest!.id),
    ])
    t.same(
      rows.map((r) => [r.id, r.row?.id ?? null]),
      [
        [middle!.id, middle!.id],
        [deleted!.id, null],
        [foreignIds[0], null],
        [newest!.id, newest!.id],
      ],
    )
  })

  t.test('authentication and workspace isolation', async (t) => {
    for (const url of ['/conversations', '/conversations/Myconversation', '/conversations/closed']) {
      t.equal((await app.inject({ url })).statusCode, 401, `${url} without credentials`)
      const visitor = app.deps.visitorTokens.sign({ guestId: guest, channelId: ws.channelId, workspaceId: ws.workspaceId }).token
      t.equal((await app.inject({ url, headers: { 'x-visitor-session': visitor } })).statusCode, 401, `${url} as a visitor`)
      const res = await app.inject({ url, headers: { ...ws.agent.headers, 'x-workspace-id': other.workspaceId } })
      t.equal(res.statusCode, 403, `${url} in a workspace the caller is not a member of`)
      t.equal(res.json().code, 'NOT_A_MEMBER')
      const otherSide = await app.inject({ url: `${url}?limit=100`, headers: other.agent.headers })
      t.equal(otherSide.statusCode, 200)
      for (const id of ids(otherSide)) t.ok(foreignIds.includes(id), `${url} shows only the other tenant's rows`)
    }
    // The other tenant's row assigned to the same userId string stays in its tenant.
    t.same(ids(await app.inject({ url: '/conversations/Myconversation', headers: other.agent.headers })), [])
  })
})
