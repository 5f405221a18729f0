import t from 'tap'
import { PresenceStore } from '../../src/gateway/presence.js'
import { build, redisOf, seedGuest, seedWorkspace, type SeededGuest } from '../helper.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'

const VISITOR_FIELDS = ['attributes', 'channelId', 'conversationCount', 'createdAt', 'currentPage', 'email', 'id', 'lastSeenAt', 'name', 'online', 'verified']

t.test('GET /visitors: newest lastSeenAt first, keyset pages, q, channelId, online', async (t) => {
  const { app, redisPrefix } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  await seedGuest(app, other, 'Outsider Zed', 'zed@elsewhere.test')
  const names = ['Ada Lovelace', 'Bob Builder', 'Cleo Patra', 'Dan Brown', 'Eve Online', 'Fay Wray', 'Gus Grissom']
  const guests: SeededGuest[] = []
  for (const [i, name] of names.entries()) {
    const g = await seedGuest(app, ws, name, `${name.split(' ')[0].toLowerCase()}@shop${i % 2}.test`)
    // Distinct, known last-seen times; one tie to prove the id breaks it.
    await app.deps.sql`UPDATE guests SET last_seen_at = ${`2026-11-0${i === 6 ? 5 : i + 1}T10:00:00Z`} WHERE id = ${g.guestId}`
    guests.push(g)
  }
  await startConversation(app, guests[0])
  await startConversation(app, guests[0])
  const get = (query: string, headers = ws.agent.headers) => app.inject({ method: 'GET', url: `/visitors${query}`, headers })

  const all = (await get('')).json()
  t.equal(all.data.length, 7, 'another workspace never shows')
  t.same(Object.keys(all.data[0]).sort(), VISITOR_FIELDS)
  const expected = guests
    .map((g, i) => ({ id: g.guestId, at: i === 6 ? 5 : i + 1 }))
    .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
    .map((x) => x.id)
  t.same(all.data.map((v: { id: string }) => v.id), expected, 'lastSeenAt desc, id desc')
  const ada = all.data.find((v: { id: string }) => v.id === guests[0].guestId)
  t.match(ada, { name: 'Ada Lovelace', email: 'ada@shop0.test', verified: false, attributes: {}, online: false, currentPage: null, conversationCount: 2, lastSeenAt: '2026-11-01T10:00:00.000Z' })

  // Keyset pages of 3 visit each visitor once, also while visitors come and go.
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const page: { data: { id: string }[]; nextCursor: string | null } = (await get(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`)).json()
    seen.push(...page.data.map((v: { id: string }) => v.id))
    cursor = page.nextCursor
    if (pages++ === 0) await seedGuest(app, ws, 'Late Comer') // newest: sorts before the cursor, never repeats
  } while (cursor)
  t.same(seen, expected)
  const tampered = await get(`?limit=3&cursor=${(await get('?limit=3')).json().nextCursor}x`)
  t.same([tampered.statusCode, tampered.json().code], [400, 'INVALID_CURSOR'])
  const otherParams = await get(`?limit=3&q=shop&cursor=${(await get('?limit=3')).json().nextCursor}`)
  t.equal(otherParams.json().code, 'INVALID_CURSOR', 'a cursor belongs to its filters')

  t.same((await get('?q=BUILD')).json().data.map((v: { name: string }) => v.name), ['Bob Builder'], 'case-insensitive substring of the name')
  t.same((await get('?q=shop1')).json().data.map((v: { name: string }) => v.name).sort(), ['Bob Builder', 'Dan Brown', 'Fay Wray'], 'of the e-mail')
  t.same((await get('?q=a%25_')).json().data, [], 'LIKE wildcards are literal')
  t.equal((await get('?q=ab')).statusCode, 400, 'q is 3..200 chars')
  t.equal((await get(`?channelId=${other.channelId}`)).json().data.length, 0, "another workspace's channel: nothing")
  t.equal((await get(`?channelId=${ws.channelId}`)).json().data.length, 8)

  const presence = new PresenceStore({ redis: redisOf(app), prefix: redisPrefix, gatewayId: 'gw-test', entryTtlMs: 30_000 })
  await presence.addVisitor(ws.workspaceId, guests[2].guestId, 's1')
  await presence.recordPageVisit(guests[2].guestId, { url: 'https://shop.example/pricing', title: 'Pricing' })
  const online = (await get('?online=true')).json().data
  t.match(online, [{ id: guests[2].guestId, online: true, currentPage: { url: 'https://shop.example/pricing', title: 'Pricing' } }])
  t.notOk((await get('?online=false')).json().data.some((v: { id: string }) => v.id === guests[2].guestId))
  t.equal((await get('?online=false')).json().data.length, 7)
  t.equal((await get('', other.owner.headers)).json().data.length, 1)
  t.equal((await get('?bogus=1')).statusCode, 400)
  t.equal((await get('', guests[0].headers)).statusCode, 401, 'visitors may not list contacts')
})

t.test('GET /visitors/online and /visitors/:guestId', async (t) => {
  const { app, redisPrefix } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const a = await seedGuest(app, ws, 'Ann')
  const b = await seedGuest(app, ws, 'Ben')
  const foreign = await seedGuest(app, other, 'Foreign')
  const presence = new PresenceStore({ redis: redisOf(app), prefix: redisPrefix, gatewayId: 'gw-test', entryTtlMs: 30_000 })
  t.same((await app.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })).json(), { data: [] })
  await presence.addVisitor(ws.workspaceId, a.guestId, 's1')
  await new Promise((r) => setTimeout(r, 5))
  await presence.addVisitor(ws.workspaceId, b.guestId, 's2')
  await presence.addVisitor(other.workspaceId, foreign.guestId, 's3')
  let online = (await app.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })).json().data
  t.same(online.map((v: { name: string }) => v.name), ['Ben', 'Ann'], 'most recently connected first; own workspace only')
  await presence.addVisitor(ws.workspaceId, a.guestId, 's4')
  online = (await app.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })).json().data
  t.same(online.map((v: { name: string }) => v.name), ['Ann', 'Ben'], 'a new connection moves the visitor up')
  await presence.removeVisitor(ws.workspaceId, a.guestId, 's1')
  await presence.removeVisitor(ws.workspaceId, a.guestId, 's4')
  online = (await app.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })).json().data
  t.same(online.map((v: { name: string }) => v.name), ['Ben'])

  for (const title of ['Home', 'Pricing', 'Checkout']) {
    await redisOf(app).del(`${redisPrefix}vpage-gate:${b.guestId}`) // the one-a-second gate, opened for the test
    await presence.recordPageVisit(b.guestId, { url: `https://shop.example/${title.toLowerCase()}`, title })
  }
  t.equal(await presence.recordPageVisit(b.guestId, { url: 'https://shop.example/too-soon', title: 'x' }), null, 'a second visit within the second is dropped')
  const profile = (await app.inject({ method: 'GET', url: `/visitors/${b.guestId}`, headers: ws.agent.headers })).json()
  t.same(Object.keys(profile).sort(), [...VISITOR_FIELDS, 'pageVisits'].sort())
  t.same(profile.pageVisits.map((p: { title: string }) => p.title), ['Checkout', 'Pricing', 'Home'], 'newest first')
  t.match(profile, { online: true, currentPage: { title: 'Checkout' } })
  for (const id of [foreign.guestId, 'nope', '00000000-0000-4000-8000-000000000000']) {
    const r = await app.inject({ method: 'GET', url: `/visitors/${id}`, headers: ws.agent.headers })
    t.same([r.statusCode, r.json().code], [404, 'GUEST_NOT_FOUND'], id)
  }
  const ttl = await redisOf(app).ttl(`${redisPrefix}vpages:${b.guestId}`)
  t.ok(ttl > 0, 'page visits expire')
})

t.test('PATCH /visitors/:guestId: name, e-mail, attributes merged and bounded', async (t) => {
  const { app, redisPrefix } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const g = await seedGuest(app, ws, 'Vera Visitor', 'vera@example.test')
  await app.deps.sql`UPDATE guests SET verified = true WHERE id = ${g.guestId}`
  const events = await listenEvents(t, redisPrefix)
  const patch = (payload: unknown, headers = ws.agent.headers, id = g.guestId) =>
    app.inject({ method: 'PATCH', url: `/visitors/${id}`, headers, payload: payload as object })

  let res = await patch({ attributes: { plan: 'pro', seats: 12, trial: false } })
  t.equal(res.statusCode, 200)
  t.same(res.json().attributes, { plan: 'pro', seats: 12, trial: false })
  t.equal(res.json().verified, true, 'attributes alone keep verification')
  await events.waitFor((e) => e.event === 'visitor:updated' && e.payload.visitor.id === g.guestId && e.rooms.join() === `ws:${ws.workspaceId}`)
  res = await patch({ attributes: { seats: 15, trial: null, country: 'NZ' } })
  t.same(res.json().attributes, { plan: 'pro', seats: 15, country: 'NZ' }, 'merged; null removes a key')
  res = await patch({ name: 'Vera V.', email: 'vera@new.test' })
  t.match(res.json(), { name: 'Vera V.', email: 'vera@new.test', verified: false }, 'a changed address is no longer verified')
  res = await patch({ email: null })
  t.equal(res.json().email, null, 'the address can be cleared')

  // The limit applies to the stored result: 3 stored + 48 new = 51.
  const many = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`k${i}`, i]))
  res = await patch({ attributes: many })
  t.same([res.statusCode, res.json().code], [400, 'VALIDATION_ERROR'])
  t.match(res.json().message, /attributes/)
  t.equal((await patch({ attributes: { ...many, plan: null } })).statusCode, 200, 'removing one in the same PATCH fits: 50')
  const [{ attributes: stored }] = await app.deps.sql<{ attributes: Record<string, unknown> }[]>`SELECT attributes FROM guests WHERE id = ${g.guestId}`
  t.equal(Object.keys(stored).length, 50)

  for (const [payload, message] of [
    [{}, /must NOT have fewer than 1 properties|properties/],
    [{ attributes: { nested: { a: 1 } } }, /attributes/],
    [{ attributes: { list: [1] } }, /attributes/],
    [{ attributes: { long: 'x'.repeat(501) } }, /attributes/],
    [{ attributes: { ['k'.repeat(65)]: 1 } }, /attributes/],
    [{ attributes: { '': 1 } }, /attributes/],
    [{ attributes: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`n${i}`, i])) }, /attributes/],
    [{ email: 'nope' }, /email/],
    [{ verified: true }, /unknown field 'verified'/],
    [{ name: '' }, /name/],
  ] as const) {
    const r = await patch(payload)
    t.equal(r.statusCode, 400, JSON.stringify(payload).slice(0, 60))
    t.match(r.json(), { code: 'VALIDATION_ERROR', message })
  }
  t.equal((await patch({ name: 'X' }, other.owner.headers)).statusCode, 404, 'another workspace: 404')
  t.equal((await patch({ name: 'X' }, ws.agent.headers, 'nope')).statusCode, 404)
  t.equal((await patch({ name: 'X' }, g.headers)).statusCode, 401, 'visitors do not edit contacts')
  const [{ name }] = await app.deps.sql<{ name: string }[]>`SELECT name FROM guests WHERE id = ${g.guestId}`
  t.equal(name, 'Vera V.', 'refused PATCHes changed nothing')
})
