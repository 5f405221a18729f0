import t from 'tap'
import { build, seedGuest, seedWorkspace, redisOf } from '../helper.js'
import { listenEvents, patch, send, startConversation, unreadCount } from './fixtures.js'

t.test('visitor starts a conversation; body must match the session', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws, 'Vera Visitor', 'vera@example.test')
  const other = await seedGuest(app, ws)

  const res = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: guest.guestId } })
  t.equal(res.statusCode, 201)
  const c = res.json()
  t.match(c, {
    workspaceId: ws.workspaceId, channelId: ws.channelId, guestId: guest.guestId,
    guest: { id: guest.guestId, name: 'Vera Visitor', email: 'vera@example.test' },
    status: 'OPEN', pinned: false, assignedAgentId: null, assignedAgent: null, seen: true, unreadCount: 0,
    lastMessagePreview: null, closedAt: null,
  })
  t.match(c.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/, 'UUIDv7 id')
  const e = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.id === c.id)
  t.same(e.rooms, [`guest:${guest.guestId}`, `ws:${ws.workspaceId}`].sort())
  t.same(e.payload.conversation, c)

  const mismatch = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: other.guestId } })
  t.equal(mismatch.statusCode, 403)
  t.equal(mismatch.json().code, 'FORBIDDEN')

  const unknown = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: guest.guestId, status: 'RESOLVED' } })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json(), { code: 'VALIDATION_ERROR', message: /unknown field 'status'/ })

  const badId = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: 'nope', guestId: guest.guestId } })
  t.equal(badId.statusCode, 400)
  t.match(badId.json().message, /channelId/)

  const missing = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId } })
  t.equal(missing.statusCode, 400)
  t.match(missing.json().message, /guestId/)

  const asMember = await app.inject({ method: 'POST', url: '/conversations', headers: ws.agent.headers, payload: { channelId: ws.channelId, guestId: guest.guestId } })
  t.equal(asMember.statusCode, 401, 'members do not start conversations')
  const count = await app.deps.sql`SELECT count(*)::int AS n FROM conversations`
  t.equal(count[0].n, 1, 'no conversation was created by a refused request')
})

t.test('get: members of the workspace and its own visitor; 404 for everyone else', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const ws2 = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const stranger = await seedGuest(app, ws)
  const c = await startConversation(app, guest)

  const asAgent = await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })
  t.equal(asAgent.statusCode, 200)
  t.same(asAgent.json(), c)
  const asVisitor = await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: guest.headers })
  t.equal(asVisitor.statusCode, 200)
  t.same(asVisitor.json(), c)

  for (const [who, headers] of [['other guest', stranger.headers], ['other workspace', ws2.owner.headers]] as const) {
    const res = await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers })
    t.equal(res.statusCode, 404, who)
    t.same(res.json(), { statusCode: 404, error: 'Not Found', code: 'CONVERSATION_NOT_FOUND', message: 'Conversation not found' })
    t.notMatch(res.body, guest.email)
  }
  for (const bad of ['not-a-uuid', '123', "1' OR '1'='1", '00000000-0000-0000-0000-00000000000g', 'x'.repeat(300)]) {
    const res = await app.inject({ method: 'GET', url: `/conversations/${encodeURIComponent(bad)}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 404, `malformed id ${bad.slice(0, 20)}`)
    t.equal(res.json().code, 'CONVERSATION_NOT_FOUND')
  }
  for (const action of ['close', 'reopen', 'pin', 'unpin', 'mark-seen', 'unassign-agent']) {
    const res = await patch(app, ws.agent.headers, 'not-a-uuid', action)
    t.equal(res.statusCode, 404, `PATCH malformed /${action}`)
    const foreign = await patch(app, ws2.owner.headers, c.id, action)
    t.equal(foreign.statusCode, 404, `PATCH foreign /${action}`)
  }
  const foreignMsg = await send(app, stranger.headers, c.id, 'hello?')
  t.equal(foreignMsg.statusCode, 404)
  const foreignList = await app.inject({ method: 'GET', url: `/conversations/${c.id}/messages`, headers: ws2.owner.headers })
  t.equal(foreignList.statusCode, 404)
  const foreignHistory = await app.inject({ method: 'GET', url: `/conversations/${c.id}/assignment-history`, headers: ws2.owner.headers })
  t.equal(foreignHistory.statusCode, 404)
  const foreignDelete = await app.inject({ method: 'DELETE', url: `/conversations/${c.id}`, headers: ws2.owner.headers })
  t.equal(foreignDelete.statusCode, 404)
  const foreignAssign = await patch(app, ws2.owner.headers, c.id, 'assign-agent', { agentId: ws2.owner.userId })
  t.equal(foreignAssign.statusCode, 404)
  const [row] = await app.deps.sql`SELECT status, pinned, deleted_at, assigned_agent_id FROM conversations WHERE id = ${c.id}`
  t.same(row, { status: 'OPEN', pinned: false, deleted_at: null, assigned_agent_id: null }, 'nothing changed')
  const none = await app.inject({ method: 'GET', url: `/conversations/${c.id}` })
  t.equal(none.statusCode, 401)
})

t.test('messages: send, retry, list with cursors, preview, validation', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws, 'Gus')
  const c = await startConversation(app, guest)

  const first = await send(app, guest.headers, c.id, 'Hello, I need help', 'cm-1')
  const m1 = first.json()

  await t.test("a guest's message: 201 with its view, message:new to the guest's and the workspace's rooms", async (t) => {
    t.equal(first.statusCode, 201)
    t.match(m1, { conversationId: c.id, senderType: 'GUEST', senderId: guest.guestId, senderName: 'Gus', body: 'Hello, I need help' })
    t.notOk('clientMessageId' in m1)
    const ev = await events.waitFor((e) => e.event === 'message:new' && e.payload.message.id === m1.id)
    t.same(ev.payload, { conversationId: c.id, message: m1 })
    t.same(ev.rooms, [`guest:${guest.guestId}`, `ws:${ws.workspaceId}`].sort())
  })

  await t.test('a retry (same clientMessageId): 200 with the first message, nothing published', async (t) => {
    const retry = await send(app, guest.headers, c.id, 'Hello, I need help (again)', 'cm-1')
    t.equal(retry.statusCode, 200, 'a retry answers 200')
    t.same(retry.json(), m1, 'with the first message')
    await events.settle()
    t.equal(events.events.filter((e) => e.event === 'message:new').length, 1, 'a retry publishes nothing')
  })

  await t.test('concurrent retries of one new send: one message, counted unread once', async (t) => {
    // Concurrent retries of one new send: one message, every answer the same message.
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(app, guest.headers, c.id, 'race', 'cm-race')))
    t.same(answers.map((a) => a.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201])
    t.equal(new Set(answers.map((a) => a.json().id)).size, 1)
    const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${c.id}`
    t.equal(n, 2)
    const conv = (await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json()
    t.equal(conv.unreadCount, 2, 'retries count once')
  })

  await t.test("an agent's reply with the same client id is another message; the preview keeps 140 whole characters", async (t) => {
    const reply = await send(app, ws.agent.headers, c.id, 'x'.repeat(200), 'cm-1')
    t.equal(reply.statusCode, 201, 'the same client id from another sender type is another message')
    t.match(reply.json(), { senderType: 'AGENT', senderId: ws.agent.userId, senderName: 'Agnes Agent' })
    const after = (await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: guest.headers })).json()
    t.equal(after.lastMessagePreview, 'x'.repeat(140))
    t.equal(after.lastMessageAt, reply.json().createdAt)
    t.equal(after.unreadCount, 2, 'an agent reply does not mark the guest messages seen')

    const emoji = await send(app, guest.headers, c.id, '😀'.repeat(150))
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: guest.headers })).json().lastMessagePreview, '😀'.repeat(140), 'preview counts characters, never splits one')
    t.equal(emoji.statusCode, 201)
  })

  await t.test('bad bodies are 400; hostile text is stored as data; 10,000 characters are allowed', async (t) => {
    for (const [payload, field] of [
      [{ body: '' }, 'body'],
      [{ body: 'x'.repeat(10_001) }, 'body'],
      [{}, 'body'],
      [{ body: 'hi', senderType: 'AGENT' }, 'senderType'],
      [{ body: 'hi', clientMessageId: '' }, 'clientMessageId'],
      [{ body: 'a\u0000b' }, 'body'],
      [{ body: 'hi', clientMessageId: 'x\u0000' }, 'clientMessageId'],
    ] as const) {
      const res = await app.inject({ method: 'POST', url: `/conversations/${c.id}/messages`, headers: guest.headers, payload })
      t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 40))
      t.match(res.json(), { code: 'VALIDATION_ERROR', message: new RegExp(field) })
    }
    const hostile = `'); DROP TABLE messages; -- \\ "quotes" <script>alert(1)</script> ünïcödé 你好`
    const h = await send(app, guest.headers, c.id, hostile)
    t.equal(h.statusCode, 201)
    t.equal(h.json().body, hostile, 'stored and returned as data')
    const longest = await send(app, guest.headers, c.id, 'y'.repeat(10_000))
    t.equal(longest.statusCode, 201, '10,000 chars is allowed')
  })

  await t.test('paging: oldest first, every message once, one sent while paging at the end', async (t) => {
    // Paging: 5 messages so far; pages of 2, oldest first, every message once.
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const url: string = `/conversations/${c.id}/messages?limit=2${cursor ? `&cursor=${cursor}` : ''}`
      const page = await app.inject({ method: 'GET', url, headers: pages % 2 ? guest.headers : ws.agent.headers })
      t.equal(page.statusCode, 200)
      const body = page.json()
      seen.push(...body.data.map((m: { id: string }) => m.id))
      cursor = body.nextCursor
      pages++
      if (pages === 1) {
        // A message sent while paging appears at the end, once.
        await send(app, guest.headers, c.id, 'while paging')
      }
    } while (cursor)
    const all = await app.deps.sql`SELECT id FROM messages WHERE conversation_id = ${c.id} ORDER BY created_at, id`
    t.same(seen, all.map((r) => r.id), 'every message once, oldest first')
    t.equal(seen.length, 7)
    t.equal(seen[0], m1.id)
  })

  await t.test('a tampered cursor or one of another conversation is 400 INVALID_CURSOR; bad limits 400', async (t) => {
    const page1 = (await app.inject({ method: 'GET', url: `/conversations/${c.id}/messages?limit=1`, headers: ws.agent.headers })).json()
    const tampered = page1.nextCursor.slice(0, -2) + (page1.nextCursor.endsWith('AA') ? 'AB' : 'AA')
    const bad = await app.inject({ method: 'GET', url: `/conversations/${c.id}/messages?cursor=${tampered}`, headers: ws.agent.headers })
    t.equal(bad.statusCode, 400)
    t.equal(bad.json().code, 'INVALID_CURSOR')
    const c2 = await startConversation(app, guest)
    const elsewhere = await app.inject({ method: 'GET', url: `/conversations/${c2.id}/messages?cursor=${page1.nextCursor}`, headers: ws.agent.headers })
    t.equal(elsewhere.statusCode, 400, 'a cursor is bound to its conversation')
    t.equal(elsewhere.json().code, 'INVALID_CURSOR')
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'foo=1']) {
      const res = await app.inject({ method: 'GET', url: `/conversations/${c.id}/messages?${q}`, headers: ws.agent.headers })
      t.equal(res.statusCode, 400, q)
    }
  })
})

t.test('guest message reopens a resolved conversation; close/reopen/pin are idempotent', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  await send(app, guest.headers, c.id, 'hi')
  const closed = await patch(app, ws.agent.headers, c.id, 'close')

  await t.test('close: RESOLVED, conversation:updated to both rooms', async (t) => {
    t.equal(closed.statusCode, 200)
    t.match(closed.json(), { status: 'RESOLVED', unreadCount: 1, seen: false })
    t.ok(closed.json().closedAt)
    const ev = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.status === 'RESOLVED')
    t.same(ev.payload.conversation, closed.json())
    t.same(ev.rooms, [`guest:${guest.guestId}`, `ws:${ws.workspaceId}`].sort())
  })

  await t.test('closing a resolved conversation changes and publishes nothing', async (t) => {
    events.clear()
    const again = await patch(app, ws.agent.headers, c.id, 'close')
    t.equal(again.statusCode, 200)
    t.same(again.json(), closed.json(), 'closing a resolved conversation changes nothing')
    await events.settle()
    t.equal(events.events.length, 0, 'and publishes nothing')
  })

  await t.test("an agent's message does not reopen it, a guest's does (also a legacy CLOSED one)", async (t) => {
    const agentMsg = await send(app, ws.agent.headers, c.id, 'anything else?')
    t.equal(agentMsg.statusCode, 201)
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json().status, 'RESOLVED', 'an agent message does not reopen')

    events.clear()
    const guestMsg = await send(app, guest.headers, c.id, 'yes, one more thing')
    t.equal(guestMsg.statusCode, 201)
    const reopened = (await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json()
    t.match(reopened, { status: 'OPEN', closedAt: null, unreadCount: 2 })
    const upd = await events.waitFor((e) => e.event === 'conversation:updated')
    t.equal(upd.payload.conversation.status, 'OPEN')

    // Legacy CLOSED behaves like RESOLVED: a guest message reopens it.
    await app.deps.sql`UPDATE conversations SET status = 'CLOSED', closed_at = now() WHERE id = ${c.id}`
    await app.deps.sql`DELETE FROM unread_counters`
    await send(app, guest.headers, c.id, 'legacy')
    t.match((await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json(), { status: 'OPEN', closedAt: null })
    await patch(app, ws.agent.headers, c.id, 'close')
  })

  await t.test('reopen, pin and unpin are idempotent', async (t) => {
    const re = await patch(app, ws.agent.headers, c.id, 'reopen')
    t.match(re.json(), { status: 'OPEN', closedAt: null })
    const re2 = await patch(app, ws.agent.headers, c.id, 'reopen')
    t.same(re2.json(), re.json(), 'reopening an open one changes nothing')

    const pin = await patch(app, ws.agent.headers, c.id, 'pin')
    t.equal(pin.json().pinned, true)
    t.equal((await patch(app, ws.agent.headers, c.id, 'pin')).json().updatedAt, pin.json().updatedAt)
    const unpin = await patch(app, ws.agent.headers, c.id, 'unpin')
    t.equal(unpin.json().pinned, false)
  })

  await t.test('visitors may not act (401); a body on a no-body action is 400, {} or an empty body is none', async (t) => {
    for (const action of ['close', 'reopen', 'pin', 'unpin', 'assign-agent', 'unassign-agent']) {
      const res = await patch(app, guest.headers, c.id, action, action === 'assign-agent' ? { agentId: ws.agent.userId } : undefined)
      t.equal(res.statusCode, 401, `a visitor cannot ${action}`)
    }
    const unknown = await app.inject({ method: 'PATCH', url: `/conversations/${c.id}/close`, headers: ws.agent.headers, payload: { status: 'OPEN' } })
    t.equal(unknown.statusCode, 400, 'a body on a no-body route is refused')
    t.match(unknown.json(), { code: 'VALIDATION_ERROR', message: "unknown field 'status'" })
    t.equal((await app.inject({ method: 'PATCH', url: `/conversations/${c.id}/pin`, headers: ws.agent.headers, payload: {} })).statusCode, 200, '{} is no body')
    t.equal((await app.inject({ method: 'PATCH', url: `/conversations/${c.id}/pin`, headers: { ...ws.agent.headers, 'content-type': 'application/json' }, payload: '' })).statusCode, 200, 'an empty JSON body is no body')
  })
})

t.test('delete: soft, permission, second delete 404, messages refused, event', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  await send(app, guest.headers, c.id, 'hi')
  t.equal((await unreadCount(app, ws)).total, 1)

  const byAgent = await app.inject({ method: 'DELETE', url: `/conversations/${c.id}`, headers: ws.agent.headers })
  t.equal(byAgent.statusCode, 403, 'an agent cannot delete')
  t.equal(byAgent.json().code, 'FORBIDDEN')
  const byVisitor = await app.inject({ method: 'DELETE', url: `/conversations/${c.id}`, headers: guest.headers })
  t.equal(byVisitor.statusCode, 401)

  const del = await app.inject({ method: 'DELETE', url: `/conversations/${c.id}`, headers: ws.admin.headers })
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  const ev = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.deleted === true)
  t.same(ev.payload, { conversation: { id: c.id, deleted: true } })
  t.same(ev.rooms, [`guest:${guest.guestId}`, `ws:${ws.workspaceId}`].sort())
  const [row] = await app.deps.sql`SELECT deleted_at FROM conversations WHERE id = ${c.id}`
  t.ok(row.deleted_at, 'the row stays (soft delete)')
  t.same(await unreadCount(app, ws), { total: 0, mine: 0, unassigned: 0, messages: 0, byChannel: {} }, 'it leaves the counts')

  const second = await app.inject({ method: 'DELETE', url: `/conversations/${c.id}`, headers: ws.admin.headers })
  t.equal(second.statusCode, 404)
  t.equal(second.json().code, 'CONVERSATION_NOT_FOUND')
  for (const headers of [guest.headers, ws.agent.headers]) {
    t.equal((await send(app, headers, c.id, 'still there?')).statusCode, 404, 'messages to a deleted conversation are 404')
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers })).statusCode, 404)
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${c.id}/messages`, headers })).statusCode, 404)
  }
  t.equal((await patch(app, ws.agent.headers, c.id, 'reopen')).statusCode, 404)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${c.id}`
  t.equal(n, 1)
})

t.test('assignment: validation, idempotence, unassign, history newest first', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const ws2 = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  const disabled = await ws.addMember('agent', 'Dis Abled')
  await app.deps.sql`UPDATE members SET status = 'disabled' WHERE user_id = ${disabled.userId}`

  for (const agentId of ['idp|nobody', ws2.agent.userId, disabled.userId]) {
    const res = await patch(app, ws.admin.headers, c.id, 'assign-agent', { agentId })
    t.equal(res.statusCode, 400, agentId)
    t.equal(res.json().code, 'INVALID_AGENT')
  }
  for (const [payload, field] of [[{}, 'agentId'], [{ agentId: '' }, 'agentId'], [{ agentId: ws.agent.userId, extra: 1 }, 'extra'], [{ agentId: 'a\u0000' }, 'agentId'], [{ agentId: 'x'.repeat(256) }, 'agentId']] as const) {
    const res = await patch(app, ws.admin.headers, c.id, 'assign-agent', payload)
    t.equal(res.statusCode, 400)
    t.match(res.json().message, field)
  }

  const a1 = await patch(app, ws.admin.headers, c.id, 'assign-agent', { agentId: ws.agent.userId })
  t.equal(a1.statusCode, 200)
  t.match(a1.json(), { assignedAgentId: ws.agent.userId, assignedAgent: { userId: ws.agent.userId, name: 'Agnes Agent' } })
  const ev = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.assignedAgentId === ws.agent.userId)
  t.same(ev.rooms, [`guest:${guest.guestId}`, `ws:${ws.workspaceId}`].sort())

  events.clear()
  const same = await patch(app, ws.admin.headers, c.id, 'assign-agent', { agentId: ws.agent.userId })
  t.equal(same.statusCode, 200)
  t.same(same.json(), a1.json(), 'the same agent again changes nothing')
  await events.settle()
  t.equal(events.events.length, 0)

  const a2 = await patch(app, ws.agent.headers, c.id, 'assign-agent', { agentId: ws.owner.userId })
  t.equal(a2.json().assignedAgentId, ws.owner.userId, 'an agent may assign (conversations:assign)')
  const un = await patch(app, ws.admin.headers, c.id, 'unassign-agent')
  t.match(un.json(), { assignedAgentId: null, assignedAgent: null })
  const un2 = await patch(app, ws.admin.headers, c.id, 'unassign-agent')
  t.same(un2.json(), un.json(), 'already unassigned changes nothing')

  const hist = await app.inject({ method: 'GET', url: `/conversations/${c.id}/assignment-history`, headers: ws.agent.headers })
  t.equal(hist.statusCode, 200)
  const data = hist.json().data
  t.match(data, [
    { action: 'UNASSIGNED', agentId: null, previousAgentId: ws.owner.userId, byUserId: ws.admin.userId },
    { action: 'ASSIGNED', agentId: ws.owner.userId, previousAgentId: ws.agent.userId, byUserId: ws.agent.userId },
    { action: 'ASSIGNED', agentId: ws.agent.userId, previousAgentId: null, byUserId: ws.admin.userId },
  ])
  t.equal(data.length, 3)
  t.ok(Date.parse(data[0].at) >= Date.parse(data[2].at))
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${c.id}/assignment-history`, headers: guest.headers })).statusCode, 401)
})

t.test('concurrent assignments form one chain', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  const agents = [ws.owner, ws.admin, ws.agent, ...(await Promise.all(Array.from({ length: 7 }, (_, i) => ws.addMember('agent', `Agent ${i}`))))]
  const answers = await Promise.all(agents.map((a) => patch(app, ws.admin.headers, c.id, 'assign-agent', { agentId: a.userId })))
  t.same(answers.map((a) => a.statusCode), agents.map(() => 200), 'every request answers 200')
  const history = (await app.inject({ method: 'GET', url: `/conversations/${c.id}/assignment-history`, headers: ws.agent.headers })).json().data
  t.equal(history.length, 10)
  const final = (await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json()
  t.equal(final.assignedAgentId, history[0].agentId, 'ends with the newest entry agent')
  for (let i = 0; i < history.length - 1; i++) {
    t.equal(history[i].previousAgentId, history[i + 1].agentId, `entry ${i} follows entry ${i + 1}`)
  }
  t.equal(history[history.length - 1].previousAgentId, null)
  t.same(new Set(history.map((h: { agentId: string }) => h.agentId)), new Set(agents.map((a) => a.userId)))
})

t.test('mark seen: members clear unread, the visitor moves its own mark', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  await send(app, guest.headers, c.id, 'one')
  await send(app, guest.headers, c.id, 'two')
  await send(app, ws.agent.headers, c.id, 'reply')

  events.clear()
  const v = await patch(app, guest.headers, c.id, 'mark-seen')
  t.equal(v.statusCode, 200)
  t.match(v.json(), { unreadCount: 2, seen: false }, 'the visitor does not clear the agents state')
  const [row] = await app.deps.sql`SELECT visitor_last_seen_at, agent_last_seen_at FROM conversations WHERE id = ${c.id}`
  t.ok(row.visitor_last_seen_at)
  t.equal(row.agent_last_seen_at, null)

  const m = await patch(app, ws.agent.headers, c.id, 'mark-seen')
  t.equal(m.statusCode, 200)
  t.match(m.json(), { unreadCount: 0, seen: true })
  const ev = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.seen === true)
  t.same(ev.payload.conversation, m.json())
  t.same(await unreadCount(app, ws), { total: 0, mine: 0, unassigned: 0, messages: 0, byChannel: {} })

  await send(app, guest.headers, c.id, 'three')
  t.match((await app.inject({ method: 'GET', url: `/conversations/${c.id}`, headers: ws.agent.headers })).json(), { unreadCount: 1, seen: false })
  const other = await seedGuest(app, ws)
  t.equal((await patch(app, other.headers, c.id, 'mark-seen')).statusCode, 404)
})

t.test('a failed publish never fails the request', async (t) => {
  const { app, logs } = await build(t, { captureLogs: true })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const c = await startConversation(app, guest)
  redisOf(app).disconnect()
  t.teardown(() => redisOf(app).status === 'end' && redisOf(app).connect().catch(() => {}))
  const res = await send(app, guest.headers, c.id, 'while redis is away')
  t.equal(res.statusCode, 201)
  const closed = await patch(app, ws.agent.headers, c.id, 'close')
  t.equal(closed.statusCode, 200)
  await new Promise((r) => setTimeout(r, 50))
  t.ok(logs.some((l) => l.msg === 'event publish failed'), 'the failure is logged')
  await redisOf(app).connect()
})
