import { randomUUID } from 'node:crypto'
import t from 'tap'
import { v7 as uuidv7 } from 'uuid'
import { build, seedGuest, seedWorkspace } from '../helper.js'

/**
 * Section 17's list parameters (status, labelIds, priority, assignee, sortBy=priority) through
 * HTTP: for each combination, following the cursors with small pages visits exactly the rows a
 * brute-force filter and sort of the table gives, in that order; a cursor reused with other
 * parameters is INVALID_CURSOR.
 */

const STATUSES = ['OPEN', 'OPEN', 'OPEN', 'PENDING', 'SNOOZED', 'RESOLVED']
const PRIORITIES = [null, null, 'low', 'medium', 'high', 'urgent']
const RANK: Record<string, number> = { low: 1, medium: 2, high: 3, urgent: 4 }

t.test('every filter combination pages exactly through the matching rows', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const labels: string[] = []
  for (const name of ['a', 'b', 'c']) {
    const res = await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name, color: '#000000' } })
    labels.push(res.json().id)
  }
  const agents = [null, ws.agent.userId, ws.admin.userId]
  // 90 rows; times repeat (every 7th shares one), so ties on the sort column are exercised.
  let seed = 7
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return (seed >>> 16) % n // the high bits: an LCG's low bits repeat with a short period
  }
  for (let i = 0; i < 90; i++) {
    const ls = labels.filter(() => rnd(2) === 0)
    const at = new Date(Date.UTC(2026, 0, 1) + (i % 7 === 0 ? 0 : rnd(100000) * 1000) + rnd(999) / 1000).toISOString()
    await app.deps.sql`
      INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, pinned, assigned_agent_id, label_ids, priority,
        last_message_at, created_at, updated_at)
      VALUES (${uuidv7()}, ${ws.workspaceId}, ${ws.channelId}, ${guest.guestId}, ${STATUSES[rnd(6)]}, ${rnd(8) === 0},
        ${agents[rnd(3)]}, ${ls}::uuid[], ${PRIORITIES[rnd(6)]}, ${at}, ${at}, ${at})`
  }
  // Another workspace's rows never show.
  const og = await seedGuest(app, other)
  await app.deps.sql`INSERT INTO conversations (id, workspace_id, channel_id, guest_id, label_ids)
    VALUES (${uuidv7()}, ${other.workspaceId}, ${other.channelId}, ${og.guestId}, ${[labels[0]]}::uuid[])`

  type Row = { id: string; status: string; pinned: boolean; agent: string | null; labels: string[]; priority: string | null; t: string; c: string }
  const rows = await app.deps.sql<Row[]>`
    SELECT id, status, pinned, assigned_agent_id AS agent, label_ids::text[] AS labels, priority,
      to_char(last_message_at, 'YYYYMMDDHH24MISSUS') AS t, to_char(created_at, 'YYYYMMDDHH24MISSUS') AS c
    FROM conversations WHERE workspace_id = ${ws.workspaceId}`

  interface Case {
    q: Record<string, string>
    url?: string
    match: (r: Row) => boolean
  }
  const me = ws.agent.userId
  const cases: Case[] = [
    { q: {}, match: (r) => r.status === 'OPEN' },
    { q: { status: 'pending' }, match: (r) => r.status === 'PENDING' },
    { q: { status: 'snoozed' }, match: (r) => r.status === 'SNOOZED' },
    { q: { status: 'active' }, match: (r) => ['OPEN', 'PENDING', 'SNOOZED'].includes(r.status) },
    { q: { labelIds: labels[0] }, match: (r) => r.status === 'OPEN' && r.labels.includes(labels[0]) },
    { q: { labelIds: `${labels[0]},${labels[1]}`, status: 'active' }, match: (r) => r.status !== 'RESOLVED' && r.labels.includes(labels[0]) && r.labels.includes(labels[1]) },
    { q: { labelIds: randomUUID() }, match: () => false },
    { q: { priority: 'urgent,high' }, match: (r) => r.status === 'OPEN' && ['urgent', 'high'].includes(r.priority ?? '') },
    { q: { priority: 'none' }, match: (r) => r.status === 'OPEN' && r.priority === null },
    { q: { assignee: 'me' }, match: (r) => r.status === 'OPEN' && r.agent === me },
    { q: { assignee: 'none', status: 'active' }, match: (r) => r.status !== 'RESOLVED' && r.agent === null },
    { q: { assignee: ws.admin.userId, labelIds: labels[2] }, match: (r) => r.status === 'OPEN' && r.agent === ws.admin.userId && r.labels.includes(labels[2]) },
    { q: { sortBy: 'priority' }, match: (r) => r.status === 'OPEN' },
    { q: { sortBy: 'priority', status: 'active', labelIds: labels[1] }, match: (r) => r.status !== 'RESOLVED' && r.labels.includes(labels[1]) },
    { q: { sortBy: 'priority', sortOrder: 'asc', priority: 'low,none' }, match: (r) => r.status === 'OPEN' && (r.priority === null || r.priority === 'low') },
    { q: { sortBy: 'createdAt', sortOrder: 'asc', status: 'active', priority: 'medium' }, match: (r) => r.status !== 'RESOLVED' && r.priority === 'medium' },
    { q: { sortBy: 'priority' }, url: '/conversations/Myconversation', match: (r) => r.agent === me },
    { q: { status: 'PENDING', labelIds: labels[0] }, url: '/conversations/Myconversation', match: (r) => r.agent === me && r.status === 'PENDING' && r.labels.includes(labels[0]) },
    { q: { assignee: 'none', priority: 'urgent,high,none' }, url: '/conversations/closed', match: (r) => r.status === 'RESOLVED' && r.agent === null && ['urgent', 'high', null].includes(r.priority) },
  ]
  const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0)
  for (const c of cases) {
    const url = c.url ?? '/conversations'
    const byPriority = c.q.sortBy === 'priority'
    const col = c.q.sortBy === 'createdAt' ? 'c' : 't'
    const asc = c.q.sortOrder === 'asc' && !byPriority
    const closed = url.endsWith('/closed')
    const expected = rows
      .filter(c.match)
      .sort((a, b) => {
        if (!closed && a.pinned !== b.pinned) return a.pinned ? -1 : 1
        if (byPriority) {
          const d = (RANK[b.priority ?? ''] ?? 0) - (RANK[a.priority ?? ''] ?? 0)
          if (d) return d
        }
        const s = cmp(a[col], b[col]) || cmp(a.id, b.id)
        return asc ? s : -s
      })
      .map((r) => r.id)
    const seen: string[] = []
    let cursor: string | undefined
    let firstCursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const qs = new URLSearchParams({ ...c.q, limit: '4', ...(cursor ? { cursor } : {}) })
      const res = await app.inject({ method: 'GET', url: `${url}?${qs}`, headers: ws.agent.headers })
      if (res.statusCode !== 200) {
        t.fail(`${url} ${qs}: ${res.statusCode} ${res.body}`)
        break
      }
      seen.push(...res.json().data.map((d: { id: string }) => d.id))
      cursor = res.json().nextCursor ?? undefined
      firstCursor ??= cursor
      if (!cursor) break
    }
    // The assignee "me" on the closed list is the agent's sorting key, not relevant here.
    t.same(seen, expected, `${url} ${JSON.stringify(c.q)}: ${expected.length} rows, in order, once each`)
    if (firstCursor) {
      const changed = new URLSearchParams({ ...c.q, labelIds: labels.join(','), limit: '4', cursor: firstCursor })
      const res = await app.inject({ method: 'GET', url: `${url}?${changed}`, headers: ws.agent.headers })
      t.equal(res.json().code, 'INVALID_CURSOR', `${JSON.stringify(c.q)}: its cursor with other labelIds`)
    }
  }

  for (const bad of ['labelIds=x', `labelIds=${[1, 2, 3, 4, 5, 6].map(() => randomUUID()).join(',')}`, 'priority=critical', 'status=resolved', 'assignee=', 'sortBy=priority&x=1']) {
    const res = await app.inject({ method: 'GET', url: `/conversations?${bad}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 400, bad)
  }
  const closedByPriority = await app.inject({ method: 'GET', url: '/conversations/closed?sortBy=priority', headers: ws.agent.headers })
  t.equal(closedByPriority.statusCode, 400, '/closed is not pinned-first and has no priority sort')
})
