import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

t.test('CSAT: open only when resolved and enabled, one per conversation, replaceable for 14 days', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const stranger = await seedGuest(app, ws, 'Stranger')
  const foreign = await seedGuest(app, other, 'Foreign')
  const conv = await startConversation(app, guest)
  const rate = (payload: object, headers = guest.headers) => app.inject({ method: 'POST', url: '/support/csat', headers, payload })
  const read = (headers: Record<string, string>, id = conv.id) => app.inject({ method: 'GET', url: `/conversations/${id}/csat`, headers })

  let res

  await t.test('refused (409 CSAT_NOT_OPEN) while open, and when resolved without csatEnabled', async (t) => {
    res = await rate({ conversationId: conv.id, rating: 5 })
    t.same([res.statusCode, res.json().code], [409, 'CSAT_NOT_OPEN'], 'OPEN conversation')
    await app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/close`, headers: ws.agent.headers })
    res = await rate({ conversationId: conv.id, rating: 5 })
    t.same([res.statusCode, res.json().code], [409, 'CSAT_NOT_OPEN'], 'resolved, but csatEnabled is false')
  })
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { csatEnabled: true } } })

  await t.test('the first rating is 201, a second replaces it; its visitor and members read it, nobody else', async (t) => {
    t.same([(await read(ws.agent.headers)).statusCode, (await read(ws.agent.headers)).json().code], [404, 'CSAT_NOT_FOUND'])
    res = await rate({ conversationId: conv.id, rating: 4, comment: 'Quick and kind' })
    t.equal(res.statusCode, 201)
    const first = res.json()
    t.match(first, { conversationId: conv.id, rating: 4, comment: 'Quick and kind' })
    t.same(Object.keys(first).sort(), ['comment', 'conversationId', 'createdAt', 'rating', 'updatedAt'])

    res = await rate({ conversationId: conv.id, rating: 2 })
    t.equal(res.statusCode, 200, 'a second rating replaces the first')
    t.match(res.json(), { rating: 2, comment: null, createdAt: first.createdAt })
    t.ok(res.json().updatedAt >= first.updatedAt)
    t.match((await read(ws.agent.headers)).json(), { rating: 2, createdAt: first.createdAt }, 'members read it')
    t.equal((await read(guest.headers)).statusCode, 200, 'its visitor reads it')
    t.equal((await read(stranger.headers)).statusCode, 404, "another guest's visitor: 404")
    t.equal((await read(other.owner.headers)).statusCode, 404, 'another workspace: 404')
    t.equal((await read(ws.agent.headers, 'nope')).statusCode, 404)
  })

  await t.test('14 days after the first rating it is closed (409 CSAT_CLOSED); refusals leave the one row', async (t) => {
    // 14 days after the first rating it can no longer change.
    await app.deps.sql`UPDATE csat_ratings SET created_at = now() - interval '14 days 1 minute' WHERE conversation_id = ${conv.id}`
    res = await rate({ conversationId: conv.id, rating: 5 })
    t.same([res.statusCode, res.json().code], [409, 'CSAT_CLOSED'])
    const rows = await app.deps.sql<{ rating: number; workspaceId: string; channelId: string; guestId: string }[]>`
      SELECT rating, workspace_id AS "workspaceId", channel_id AS "channelId", guest_id AS "guestId" FROM csat_ratings`
    t.same(rows, [{ rating: 2, workspaceId: ws.workspaceId, channelId: ws.channelId, guestId: guest.guestId }], 'one row, unchanged by refusals')
  })

  // Who may rate.
  const conv2 = await startConversation(app, guest)
  await app.inject({ method: 'PATCH', url: `/conversations/${conv2.id}/close`, headers: ws.agent.headers })

  await t.test("who may rate: another guest's or workspace's visitor 404, members and nobody 401; bad input 400", async (t) => {
    t.equal((await rate({ conversationId: conv2.id, rating: 3 }, stranger.headers)).statusCode, 404, "another guest's conversation: 404")
    t.equal((await rate({ conversationId: conv2.id, rating: 3 }, foreign.headers)).statusCode, 404, "another workspace's visitor: 404")
    t.equal((await rate({ conversationId: conv2.id, rating: 3 }, ws.agent.headers)).statusCode, 401, 'members do not rate')
    t.equal((await rate({ conversationId: conv2.id, rating: 3 }, {})).statusCode, 401)
    for (const [payload, message] of [
      [{ conversationId: conv2.id, rating: 0 }, /rating/],
      [{ conversationId: conv2.id, rating: 6 }, /rating/],
      [{ conversationId: conv2.id, rating: 4.5 }, /rating/],
      [{ conversationId: conv2.id, rating: '4' }, /rating/],
      [{ conversationId: conv2.id, rating: 4, comment: 'x'.repeat(1001) }, /comment/],
      [{ conversationId: 'nope', rating: 4 }, /conversationId/],
      [{ conversationId: conv2.id, rating: 4, guestId: guest.guestId }, /unknown field 'guestId'/],
    ] as const) {
      const r = await rate(payload)
      t.equal(r.statusCode, 400, JSON.stringify(payload).slice(0, 80))
      t.match(r.json(), { code: 'VALIDATION_ERROR', message })
    }
  })

  await t.test('a legacy CLOSED conversation is rated like a resolved one; a deleted one is 404', async (t) => {
    await app.deps.sql`UPDATE conversations SET status = 'CLOSED' WHERE id = ${conv2.id}`
    t.equal((await rate({ conversationId: conv2.id, rating: 3 })).statusCode, 201, 'legacy CLOSED behaves like RESOLVED')
    await app.inject({ method: 'DELETE', url: `/conversations/${conv2.id}`, headers: ws.owner.headers })
    t.equal((await rate({ conversationId: conv2.id, rating: 3 })).statusCode, 404, 'deleted: 404')
    t.equal((await read(ws.agent.headers, conv2.id)).statusCode, 404)
  })
})

t.test('concurrent ratings of one conversation: one row, one 201', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  await app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/close`, headers: ws.agent.headers })
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { csatEnabled: true } } })
  const results = await Promise.all(
    [1, 2, 3, 4, 5, 1, 2, 3].map((rating) => app.inject({ method: 'POST', url: '/support/csat', headers: guest.headers, payload: { conversationId: conv.id, rating } })),
  )
  t.same(results.map((r) => r.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201])
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM csat_ratings`
  t.equal(n, 1)
})
