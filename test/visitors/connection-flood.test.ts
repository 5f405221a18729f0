import t from 'tap'
import type { Socket } from 'socket.io-client'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { connect, next, record, refusal, startGateway, testDatabaseAndPrefix } from '../gateway/fixtures.js'

/**
 * A visitor session reconnecting in a loop (API.md section 2): the handshakes are limited per
 * guest and per client address (the contract's defaults, counted in Redis and shared by the
 * gateways), and visitor:updated is debounced: at most one a second per guest, and a
 * reconnection within 5 seconds announces nothing.
 *
 * The gateways trust the test's X-Forwarded-For (TRUST_PROXY=127.0.0.1), so each test speaks from
 * client addresses of its own.
 */

interface VisitorEvent {
  visitor: { id: string; online: boolean; lastSeenAt: string }
}

const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
const env = { TRUST_PROXY: '127.0.0.1', VISITOR_CONNECTIONS_PER_MIN: '30', VISITOR_CONNECTIONS_PER_ADDRESS_PER_MIN: '120' }
const [{ app }, gA, gB] = await Promise.all([
  build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix } }),
  startGateway(t, { databaseUrl, redisPrefix, env }),
  startGateway(t, { databaseUrl, redisPrefix, env }),
])
const ws = await seedWorkspace(app)
const watcher = await connect(t, gA.url, { token: ws.agent.token, workspaceId: ws.workspaceId })
const events = record<VisitorEvent>(watcher, 'visitor:updated')
const eventsOf = (guestId: string) => events.filter((e) => e.visitor.id === guestId)
const arrivals: { id: string; online: boolean; at: number }[] = []
watcher.on('visitor:updated', (e: VisitorEvent) => arrivals.push({ id: e.visitor.id, online: e.visitor.online, at: Date.now() }))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const from = (address: string) => ({ extraHeaders: { 'x-forwarded-for': address } })
const onlineIds = async () =>
  (await app.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })).json().data.map((v: { id: string }) => v.id)

/** One handshake and an immediate disconnect: 'ok', or the refusal's message. */
async function cycle(url: string, session: string, address: string): Promise<string> {
  let socket: Socket
  try {
    socket = await connect(t, url, { visitorSession: session }, from(address))
  } catch (err) {
    return (err as Error).message
  }
  socket.disconnect()
  return 'ok'
}

t.test('100 connect/disconnects in a few seconds: 30 accepted, and members hear online once and offline once', async (t) => {
  const guest = await seedGuest(app, ws, 'Flo Flood')
  const started = Date.now()
  const results: string[] = []
  let lastDisconnect = 0
  for (let i = 0; i < 100; i++) {
    results.push(await cycle(gA.url, guest.session, '198.51.100.1'))
    if (results.at(-1) === 'ok') lastDisconnect = Date.now()
  }
  const took = Date.now() - started
  t.ok(took < 5000, `100 cycles in ${took} ms`)
  t.equal(results.filter((r) => r === 'ok').length, 30, 'VISITOR_CONNECTIONS_PER_MIN: 30 a minute per guest')
  t.same([...new Set(results.slice(30))], ['RATE_LIMITED'], 'the rest refused with connect_error RATE_LIMITED')

  // The rule: at most one a second per guest (the first at once), and the last disconnect's
  // offline 5 s later; reconnections within 5 s add nothing. So at most one per started second
  // of cycling, plus the offline.
  await next<VisitorEvent>(watcher, 'visitor:updated', (e) => e.visitor.id === guest.guestId && !e.visitor.online, 8000)
  await sleep(1200)
  const seen = arrivals.filter((a) => a.id === guest.guestId)
  const bound = Math.floor(took / 1000) + 1 + 1
  t.ok(seen.length >= 1 && seen.length <= bound, `${seen.length} visitor:updated for 30 connections (at most ${bound}; was 2 per connection)`)
  for (let i = 1; i < seen.length; i++) t.ok(seen[i].at - seen[i - 1].at >= 900, `${seen[i].at - seen[i - 1].at} ms between two announcements`)
  t.equal(seen.at(-1)!.online, false, 'the last one members hear: offline')
  t.ok(seen.at(-1)!.at - lastDisconnect >= 4500, `the offline came ${seen.at(-1)!.at - lastDisconnect} ms after the last disconnect`)
  t.same(await onlineIds(), [], 'final state: offline')
})

t.test('a reconnection within 5 s announces nothing and leaves lastSeenAt alone', async (t) => {
  const guest = await seedGuest(app, ws, 'Rita Reconnect')
  const up = next<VisitorEvent>(watcher, 'visitor:updated', (e) => e.visitor.id === guest.guestId)
  const first = await connect(t, gA.url, { visitorSession: guest.session }, from('198.51.100.2'))
  t.equal((await up).visitor.online, true)
  const [{ seen }] = await app.deps.sql<{ seen: string }[]>`SELECT last_seen_at::text AS seen FROM guests WHERE id = ${guest.guestId}`

  first.disconnect()
  await sleep(2000)
  const second = await connect(t, gA.url, { visitorSession: guest.session }, from('198.51.100.2'))
  await sleep(5500) // past the offline delay of the first disconnect
  t.same(eventsOf(guest.guestId).map((e) => e.visitor.online), [true], 'nothing after the first online')
  t.same(await onlineIds(), [guest.guestId])
  const [{ now }] = await app.deps.sql<{ now: string }[]>`SELECT last_seen_at::text AS now FROM guests WHERE id = ${guest.guestId}`
  t.equal(now, seen, 'the debounced reconnection did not UPDATE the guest')

  second.disconnect()
  const down = await next<VisitorEvent>(watcher, 'visitor:updated', (e) => e.visitor.id === guest.guestId, 8000)
  t.equal(down.visitor.online, false, 'a disconnect that lasts is announced')
})

t.test('the 31st handshake of a guest in a minute is refused, whichever gateway: the budget is shared', async (t) => {
  const guest = await seedGuest(app, ws, 'Lim Limit')
  const results: string[] = []
  for (let i = 0; i < 30; i++) results.push(await cycle(i % 2 ? gB.url : gA.url, guest.session, '198.51.100.3'))
  t.same([...new Set(results)], ['ok'])
  const refused = await refusal(t, gB.url, { visitorSession: guest.session }, from('198.51.100.4'))
  t.equal(refused.message, 'RATE_LIMITED', 'the 31st, from another address too')
  t.equal(refused.data?.code, 'RATE_LIMITED')
  const retryAfter = (refused.data as { retryAfter?: number } | undefined)?.retryAfter ?? 0
  t.ok(retryAfter >= 1 && retryAfter <= 60, `retryAfter ${retryAfter}`)
  t.same(refused.data, { code: 'RATE_LIMITED', message: `Too many connections, retry in ${retryAfter} s`, retryAfter }, 'the whole refusal, as the wire carries it')
  const other = await seedGuest(app, ws, 'Other')
  t.equal(await cycle(gA.url, other.session, '198.51.100.3'), 'ok', 'another guest has its own budget')
  t.equal(
    (await refusal(t, gA.url, { visitorSession: 'not-a-session' }, from('198.51.100.3'))).message,
    'UNAUTHENTICATED',
    'bad credentials are refused for what they are',
  )
})

t.test('120 handshakes a minute per client address, an IPv6 /64 being one address', async (t) => {
  const guests = await Promise.all([1, 2, 3, 4, 5].map((i) => seedGuest(app, ws, `Addr ${i}`)))
  const results: string[] = []
  for (let i = 0; i < 120; i++) {
    // 30 per guest (their own limit), each handshake from another host of the same /64.
    results.push(await cycle(i % 2 ? gA.url : gB.url, guests[Math.floor(i / 30)].session, `2001:db8:77:1::${(i + 1).toString(16)}`))
  }
  t.same([...new Set(results)], ['ok'])
  const over = await refusal(t, gA.url, { visitorSession: guests[4].session }, from('2001:db8:77:1:ffff::1'))
  t.equal(over.message, 'RATE_LIMITED', 'the 121st of the /64, from a guest with budget left')
  t.equal(await cycle(gA.url, guests[4].session, '2001:db8:77:2::1'), 'ok', 'another /64 has its own budget')
})
