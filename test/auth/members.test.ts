import t from 'tap'
import { build, memberToken, seedWorkspace, type SeededMember } from '../helper.js'

const path = (m: SeededMember | string) => `/auth/members/${encodeURIComponent(typeof m === 'string' ? m : m.userId)}`

t.test('GET /auth/members: page, pageSize, total, order', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  for (let i = 0; i < 4; i++) await ws.addMember('agent', `Extra ${i}`)
  const first = await app.inject({ method: 'GET', url: '/auth/members?pageSize=3', headers: ws.agent.headers })
  t.equal(first.statusCode, 200, 'an agent may read members')
  const body = first.json()
  t.match(body, { page: 1, pageSize: 3, total: 7 })
  t.same(body.data.map((m: { name: string }) => m.name), ['Olivia Owner', 'Adam Admin', 'Agnes Agent'], 'oldest membership first')
  t.same(Object.keys(body.data[0]).sort(), ['email', 'joinedAt', 'name', 'role', 'status', 'userId'])
  t.match(body.data[0], { userId: ws.owner.userId, role: 'owner', status: 'active', email: ws.owner.email })
  t.ok(body.data[0].joinedAt.endsWith('Z'))
  const third = (await app.inject({ method: 'GET', url: '/auth/members?page=3&pageSize=3', headers: ws.agent.headers })).json()
  t.match(third, { page: 3, pageSize: 3, total: 7 })
  t.same(third.data.map((m: { name: string }) => m.name), ['Extra 3'])
  const all = new Set<string>()
  for (let p = 1; p <= 3; p++) {
    const page = (await app.inject({ method: 'GET', url: `/auth/members?page=${p}&pageSize=3`, headers: ws.agent.headers })).json()
    for (const m of page.data) all.add(m.userId)
  }
  t.equal(all.size, 7, 'pages visit every member once')
  const beyond = (await app.inject({ method: 'GET', url: '/auth/members?page=9', headers: ws.agent.headers })).json()
  t.same([beyond.data.length, beyond.total, beyond.pageSize], [0, 7, 20], 'default pageSize 20; a page past the end is empty')

  for (const [qs, field] of [['pageSize=0', 'pageSize'], ['pageSize=101', 'pageSize'], ['page=0', 'page'], ['page=abc', 'page']]) {
    const res = await app.inject({ method: 'GET', url: `/auth/members?${qs}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 400, qs)
    t.match(res.json(), { code: 'VALIDATION_ERROR', message: new RegExp(field) }, `${qs} names the field`)
  }
})

t.test('POST /auth/members', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const body = { userId: 'google-oauth2|1034', name: 'New Agent', email: 'new@example.test', role: 'agent' }

  // The newcomer tries first: this replica caches "not a member" for them.
  const newcomer = { authorization: `Bearer ${await memberToken(body.userId)}`, 'x-workspace-id': ws.workspaceId }
  t.equal((await app.inject({ method: 'GET', url: '/auth/members', headers: newcomer })).statusCode, 403)

  const res = await app.inject({ method: 'POST', url: '/auth/members', headers: ws.admin.headers, payload: body })
  t.equal(res.statusCode, 201)
  t.match(res.json(), { userId: body.userId, name: 'New Agent', email: 'new@example.test', role: 'agent', status: 'active' })
  t.equal((await app.inject({ method: 'GET', url: '/auth/members', headers: newcomer })).statusCode, 200, 'access at once after being added')

  const dup = await app.inject({ method: 'POST', url: '/auth/members', headers: ws.owner.headers, payload: { ...body, name: 'Other' } })
  t.same([dup.statusCode, dup.json().code], [409, 'MEMBER_EXISTS'], 'existing userId')

  const adminGrantsOwner = await app.inject({ method: 'POST', url: '/auth/members', headers: ws.admin.headers, payload: { ...body, userId: 'u-2', role: 'owner' } })
  t.same([adminGrantsOwner.statusCode, adminGrantsOwner.json().code], [403, 'FORBIDDEN'], 'only an owner may grant owner')
  const ownerGrantsOwner = await app.inject({ method: 'POST', url: '/auth/members', headers: ws.owner.headers, payload: { ...body, userId: 'u-2', role: 'owner' } })
  t.equal(ownerGrantsOwner.statusCode, 201)
  const agent = await app.inject({ method: 'POST', url: '/auth/members', headers: ws.agent.headers, payload: { ...body, userId: 'u-3' } })
  t.same([agent.statusCode, agent.json().code], [403, 'FORBIDDEN'], 'agents lack members:manage')

  const bad: [Record<string, unknown>, RegExp][] = [
    [{ ...body, userId: 'u-4', role: 'superuser' }, /role/],
    [{ ...body, userId: 'u-4', email: 'not-an-email' }, /email/],
    [{ ...body, userId: 'u-4', name: '' }, /name/],
    [{ ...body, userId: 'u-4', name: 'x'.repeat(201) }, /name/],
    [{ ...body, userId: 'x'.repeat(256) }, /userId/],
    [{ ...body, userId: '' }, /userId/],
    [{ name: 'N', email: 'n@example.test', role: 'agent' }, /missing field 'userId'/],
    [{ ...body, userId: 'u-4', status: 'active' }, /unknown field 'status'/],
    [{ ...body, userId: 'u-4', workspaceId: ws.workspaceId }, /unknown field 'workspaceId'/],
  ]
  for (const [payload, message] of bad) {
    const r = await app.inject({ method: 'POST', url: '/auth/members', headers: ws.owner.headers, payload })
    t.equal(r.statusCode, 400, String(message))
    t.match(r.json(), { statusCode: 400, code: 'VALIDATION_ERROR', message })
  }
  const text = await app.inject({ method: 'POST', url: '/auth/members', headers: { ...ws.owner.headers, 'content-type': 'text/plain' }, payload: 'hi' })
  t.equal(text.statusCode, 415)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM members WHERE workspace_id = ${ws.workspaceId}`
  t.equal(n, 5, 'only the two valid additions were written')
})

t.test('PATCH /auth/members/:userId and role boundaries', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const patch = (by: SeededMember, target: SeededMember | string, payload: unknown) =>
    app.inject({ method: 'PATCH', url: path(target), headers: by.headers, payload: payload as object })

  await t.test('an admin promotes an agent to admin and back', async (t) => {
    const promoted = await patch(ws.admin, ws.agent, { role: 'admin' })
    t.equal(promoted.statusCode, 200)
    t.match(promoted.json(), { userId: ws.agent.userId, role: 'admin', status: 'active' })
    t.equal((await patch(ws.admin, ws.agent, { role: 'agent' })).json().role, 'agent')
  })

  await t.test('role boundaries: agents manage nobody, admins never grant, demote or disable an owner', async (t) => {
    t.same((await patch(ws.agent, ws.admin, { role: 'agent' })).statusCode, 403, 'agent cannot manage members')
    t.equal((await patch(ws.admin, ws.agent, { role: 'owner' })).statusCode, 403, 'admin cannot grant owner')
    t.equal((await patch(ws.admin, ws.admin, { role: 'owner' })).statusCode, 403, 'admin cannot make itself owner')
    t.equal((await patch(ws.admin, ws.owner, { role: 'agent' })).statusCode, 403, 'admin cannot demote an owner')
    t.equal((await patch(ws.admin, ws.owner, { status: 'disabled' })).statusCode, 403, 'admin cannot disable an owner')
  })

  await t.test('the last active owner cannot be demoted or disabled; with another one it may step down', async (t) => {
    const last = await patch(ws.owner, ws.owner, { role: 'admin' })
    t.same([last.statusCode, last.json().code], [409, 'LAST_OWNER'], 'the last owner cannot be demoted')
    t.same((await patch(ws.owner, ws.owner, { status: 'disabled' })).json().code, 'LAST_OWNER', 'nor disabled')

    const second = await ws.addMember('owner')
    t.equal((await patch(ws.owner, second, { status: 'disabled' })).statusCode, 200)
    t.same((await patch(ws.owner, ws.owner, { role: 'agent' })).json().code, 'LAST_OWNER', 'a disabled owner does not count')
    t.equal((await patch(ws.owner, second, { status: 'active' })).statusCode, 200)
    t.equal((await patch(ws.owner, ws.owner, { role: 'admin' })).statusCode, 200, 'with another active owner, an owner may step down')
    t.equal((await patch(second, ws.owner, { role: 'owner' })).statusCode, 200, 'an owner may grant owner')
  })

  await t.test('disabling and enabling take effect at once on this replica', async (t) => {
    const disabled = await patch(ws.owner, ws.agent, { status: 'disabled' })
    t.equal(disabled.json().status, 'disabled')
    t.equal((await app.inject({ method: 'GET', url: '/auth/members', headers: ws.agent.headers })).statusCode, 403, 'disabled at once on this replica')
    t.equal((await patch(ws.owner, ws.agent, { status: 'active' })).statusCode, 200)
    t.equal((await app.inject({ method: 'GET', url: '/auth/members', headers: ws.agent.headers })).statusCode, 200, 'enabled again')
  })

  await t.test('an unknown member is 404 MEMBER_NOT_FOUND; bad bodies are 400', async (t) => {
    const unknown = await patch(ws.owner, 'idp|nobody', { role: 'agent' })
    t.same([unknown.statusCode, unknown.json().code], [404, 'MEMBER_NOT_FOUND'])
    for (const [payload, message] of [
      [{}, /fewer than 1|body/],
      [{ role: 'root' }, /role/],
      [{ status: 'gone' }, /status/],
      [{ role: 'agent', name: 'x' }, /unknown field 'name'/],
    ] as const) {
      const r = await patch(ws.owner, ws.agent, payload)
      t.equal(r.statusCode, 400, JSON.stringify(payload))
      t.match(r.json().message, message)
    }
  })
})

t.test('DELETE /auth/members/:userId', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  t.equal((await app.inject({ method: 'DELETE', url: path(ws.admin), headers: ws.agent.headers })).statusCode, 403, 'agent')
  t.equal((await app.inject({ method: 'DELETE', url: path(ws.owner), headers: ws.admin.headers })).statusCode, 403, 'admin removing an owner')
  const last = await app.inject({ method: 'DELETE', url: path(ws.owner), headers: ws.owner.headers })
  t.same([last.statusCode, last.json().code], [409, 'LAST_OWNER'])
  t.equal((await app.inject({ method: 'GET', url: '/auth/members', headers: ws.agent.headers })).statusCode, 200)
  const gone = await app.inject({ method: 'DELETE', url: path(ws.agent), headers: ws.admin.headers })
  t.equal(gone.statusCode, 204)
  t.equal(gone.body, '')
  const after = await app.inject({ method: 'GET', url: '/auth/members', headers: ws.agent.headers })
  t.same([after.statusCode, after.json().code], [403, 'NOT_A_MEMBER'], 'a removed member loses access at once on this replica')
  const again = await app.inject({ method: 'DELETE', url: path(ws.agent), headers: ws.admin.headers })
  t.same([again.statusCode, again.json().code], [404, 'MEMBER_NOT_FOUND'])
  const second = await ws.addMember('owner')
  t.equal((await app.inject({ method: 'DELETE', url: path(second), headers: ws.owner.headers })).statusCode, 204, 'owner removes another owner')
})

t.test('cross-workspace: a member of B learns nothing about A', async (t) => {
  const { app } = await build(t)
  const a = await seedWorkspace(app, 'A')
  const b = await seedWorkspace(app, 'B')
  const asBInA = { ...b.owner.headers, 'x-workspace-id': a.workspaceId }
  const list = await app.inject({ method: 'GET', url: '/auth/members', headers: asBInA })
  t.same([list.statusCode, list.json().code], [403, 'NOT_A_MEMBER'])
  t.notMatch(list.body, new RegExp(a.owner.userId.replace('|', '\\|')))
  // Under B's own header, A's members are simply not there.
  const patch = await app.inject({ method: 'PATCH', url: path(a.agent), headers: b.owner.headers, payload: { role: 'admin' } })
  t.same([patch.statusCode, patch.json().code], [404, 'MEMBER_NOT_FOUND'])
  const del = await app.inject({ method: 'DELETE', url: path(a.owner), headers: b.owner.headers })
  t.same([del.statusCode, del.json().code], [404, 'MEMBER_NOT_FOUND'])
  const listB = (await app.inject({ method: 'GET', url: '/auth/members', headers: b.owner.headers })).json()
  t.equal(listB.total, 3)
  t.notOk(listB.data.some((m: { userId: string }) => m.userId === a.owner.userId))
  // Adding A's member to B creates a separate membership, A untouched.
  const add = await app.inject({ method: 'POST', url: '/auth/members', headers: b.owner.headers, payload: { userId: a.agent.userId, name: 'Dual', email: 'dual@example.test', role: 'agent' } })
  t.equal(add.statusCode, 201)
  const rows = await app.deps.sql<{ workspaceId: string; role: string }[]>`
    SELECT workspace_id AS "workspaceId", role FROM members WHERE user_id = ${a.agent.userId}`
  t.equal(rows.length, 2)
  t.equal(rows.find((r) => r.workspaceId === a.workspaceId)?.role, 'agent', "A's row unchanged")
})

t.test('last-owner protection holds under concurrency', async (t) => {
  const { app } = await build(t)
  for (let round = 0; round < 5; round++) {
    const ws = await seedWorkspace(app, `Race ${round}`)
    const second = await ws.addMember('owner')
    // Each owner demotes (or removes, or disables) the other at the same moment.
    const ops = [
      () => app.inject({ method: 'PATCH', url: path(second), headers: ws.owner.headers, payload: { role: 'agent' } }),
      () =>
        round % 2
          ? app.inject({ method: 'DELETE', url: path(ws.owner), headers: second.headers })
          : app.inject({ method: 'PATCH', url: path(ws.owner), headers: second.headers, payload: { status: 'disabled' } }),
    ]
    const results = await Promise.all(ops.map((op) => op()))
    const statuses = results.map((r) => r.statusCode)
    const [{ n }] = await app.deps.sql`
      SELECT count(*)::int AS n FROM members WHERE workspace_id = ${ws.workspaceId} AND role = 'owner' AND status = 'active'`
    t.equal(n, 1, `round ${round}: exactly one active owner left (${statuses.join(',')})`)
    t.ok(statuses.every((s) => s === 200 || s === 204 || s === 409 || s === 403), `round ${round}: no 5xx`)
    t.equal(statuses.filter((s) => s === 409 || s === 403).length, 1, `round ${round}: one of the two was refused`)
  }
})

t.test('a removed or disabled member loses access on every replica within MEMBER_CACHE_TTL_MS', async (t) => {
  const ttl = 600
  const one = await build(t, { env: { MEMBER_CACHE_TTL_MS: String(ttl) } })
  const two = await build(t, { env: { MEMBER_CACHE_TTL_MS: String(ttl) }, databaseUrl: one.databaseUrl })
  const ws = await seedWorkspace(one.app)
  const victim = await ws.addMember('agent')
  const removed = await ws.addMember('agent')
  const get = (app: typeof one.app, m: SeededMember) => app.inject({ method: 'GET', url: '/auth/members', headers: m.headers })
  // Replica two has both memberships cached now.
  t.equal((await get(two.app, victim)).statusCode, 200)
  t.equal((await get(two.app, removed)).statusCode, 200)

  const waitForRefusal = async (m: SeededMember) => {
    const start = Date.now()
    for (;;) {
      const res = await get(two.app, m)
      if (res.statusCode === 403) return Date.now() - start
      if (Date.now() - start > ttl * 3) return Infinity
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const t0 = Date.now()
  t.equal((await one.app.inject({ method: 'PATCH', url: path(victim), headers: ws.owner.headers, payload: { status: 'disabled' } })).statusCode, 200)
  t.equal((await one.app.inject({ method: 'DELETE', url: path(removed), headers: ws.owner.headers })).statusCode, 204)
  const disabledAfter = await waitForRefusal(victim)
  const removedAfter = await waitForRefusal(removed)
  t.ok(disabledAfter <= ttl + 250, `disabled member refused on the other replica after ${disabledAfter} ms (TTL ${ttl})`)
  t.ok(Date.now() - t0 <= ttl + 400, `removed member refused on the other replica after ${removedAfter} ms`)
  t.equal((await get(one.app, victim)).json().code, 'MEMBER_DISABLED', 'and at once on the replica that made the change')
  // And the reverse: a member added on one replica is let in by the other within the TTL, even
  // though that replica had cached "not a member" for them.
  const newcomer = { userId: 'idp|newcomer', name: 'New', email: 'new@example.test', role: 'agent' }
  const newcomerHeaders = { authorization: `Bearer ${await memberToken(newcomer.userId)}`, 'x-workspace-id': ws.workspaceId }
  t.equal((await two.app.inject({ method: 'GET', url: '/auth/members', headers: newcomerHeaders })).statusCode, 403)
  t.equal((await one.app.inject({ method: 'POST', url: '/auth/members', headers: ws.owner.headers, payload: newcomer })).statusCode, 201)
  const t1 = Date.now()
  let admitted = Infinity
  while (Date.now() - t1 < ttl * 3) {
    if ((await two.app.inject({ method: 'GET', url: '/auth/members', headers: newcomerHeaders })).statusCode === 200) {
      admitted = Date.now() - t1
      break
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  t.ok(admitted <= ttl + 250, `new member admitted on the other replica after ${admitted} ms`)
  const row = await one.app.deps.sql`SELECT 1 FROM members WHERE workspace_id = ${ws.workspaceId} AND user_id = ${removed.userId}`
  t.equal(row.length, 0)
})
