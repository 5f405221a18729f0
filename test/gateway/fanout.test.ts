import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { Socket } from 'socket.io-client'
import { rooms } from '../../src/events.js'
import { build, memberToken, seedGuest, seedWorkspace } from '../helper.js'
import { connect, next, record, refusal, startGateway, testDatabaseAndPrefix } from './fixtures.js'

// Two real gateway processes and the API's own publisher (app.deps.events, what every REST route
// calls) on one Redis prefix and one database.
const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
const [{ app }, g1, g2] = await Promise.all([
  build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix } }),
  startGateway(t, { databaseUrl, redisPrefix }),
  startGateway(t, { databaseUrl, redisPrefix }),
])
const wsA = await seedWorkspace(app, 'Acme')
const wsB = await seedWorkspace(app, 'Other')
const guestA1 = await seedGuest(app, wsA, 'Gina')
const guestA2 = await seedGuest(app, wsA, 'Gus')
const guestB = await seedGuest(app, wsB, 'Bea')

const member = (m: { token: string }, workspaceId: string) => ({ token: m.token, workspaceId })
const visitor = (g: { session: string }) => ({ visitorSession: g.session })

/**
 * Publishes a barrier to every room of `sockets` and waits until each socket has it. Redis
 * delivers one gateway's messages in publish order and a socket receives them in order, so
 * anything published before the barrier that a socket has not seen by then never comes.
 */
async function barrier(targets: { socket: Socket; room: string }[]) {
  const id = randomUUID()
  const arrived = targets.map(({ socket }) => next<{ barrier?: string }>(socket, 'conversation:updated', (p) => p.barrier === id))
  app.deps.events.publish([...new Set(targets.map((x) => x.room))], 'conversation:updated', { barrier: id })
  await Promise.all(arrived)
}

t.test('handshakes without valid credentials are refused with the reason', async (t) => {
  const cases: [string, Record<string, unknown>, string, string?][] = [
    ['no auth payload', {}, 'UNAUTHENTICATED'],
    ['garbage token', { token: 'not-a-jwt', workspaceId: wsA.workspaceId }, 'UNAUTHENTICATED'],
    ['token from another signer', { token: await memberToken(wsA.agent.userId, { secret: 'some-other-secret-0123456789abcdef' }), workspaceId: wsA.workspaceId }, 'UNAUTHENTICATED'],
    ['expired token', { token: await memberToken(wsA.agent.userId, { expiresIn: Math.floor(Date.now() / 1000) - 60 }), workspaceId: wsA.workspaceId }, 'UNAUTHENTICATED'],
    ['visitor session used as a member token', { token: guestA1.session, workspaceId: wsA.workspaceId }, 'UNAUTHENTICATED'],
    ['member token used as a visitor session', { visitorSession: wsA.agent.token }, 'UNAUTHENTICATED'],
    ['garbage visitor session', { visitorSession: 'x.y.z' }, 'UNAUTHENTICATED'],
    ['token without a workspace', { token: wsA.agent.token }, 'UNAUTHENTICATED', 'WORKSPACE_REQUIRED'],
    ['member of another workspace', member(wsB.agent, wsA.workspaceId), 'NOT_A_MEMBER'],
    ['unknown workspace', member(wsA.agent, randomUUID()), 'NOT_A_MEMBER'],
    ['workspace id that is not a uuid', member(wsA.agent, "' OR 1=1 --"), 'NOT_A_MEMBER'],
    ['valid token of a stranger', { token: await memberToken('idp|stranger'), workspaceId: wsA.workspaceId }, 'NOT_A_MEMBER'],
  ]
  for (const [name, auth, reason, code] of cases) {
    const err = await refusal(t, g1.url, auth)
    t.equal(err.message, reason, name)
    if (code) t.equal(err.data?.code, code, `${name}: code`)
    t.notMatch(JSON.stringify(err.data ?? {}), /secret|stack|select/i, `${name}: no internals in the refusal`)
  }
  // The refusals the gateway words itself, whole (the socket protocol's wire format).
  t.same((await refusal(t, g1.url, {})).data, { code: 'UNAUTHENTICATED', message: 'Credentials required: { token, workspaceId } or { visitorSession }' })
  t.same((await refusal(t, g1.url, { token: wsA.agent.token })).data, { code: 'WORKSPACE_REQUIRED', message: 'workspaceId is required with a member token' })
  const disabled = await wsA.addMember('agent', 'Dora Disabled')
  await app.deps.sql`UPDATE members SET status = 'disabled' WHERE user_id = ${disabled.userId}`
  const err = await refusal(t, g2.url, member(disabled, wsA.workspaceId))
  t.equal(err.message, 'NOT_A_MEMBER', 'disabled member')
  t.equal(err.data?.code, 'MEMBER_DISABLED')
  // Tokens never reach the log.
  const log = JSON.stringify([...g1.logs, ...g2.logs])
  t.notOk(log.includes(wsA.agent.token) || log.includes(guestA1.session), 'credentials are not logged')
  t.ok(g1.logs.some((l) => l.msg === 'member token refused' && l.reason), 'refusals are logged with a reason')
})

t.test('events reach members on both gateways and only the right visitor', async (t) => {
  const agentOnG1 = await connect(t, g1.url, member(wsA.agent, wsA.workspaceId))
  const ownerOnG2 = await connect(t, g2.url, member(wsA.owner, wsA.workspaceId))
  // The workspace id is matched case-insensitively, as on HTTP.
  const adminOnG2 = await connect(t, g2.url, member(wsA.admin, wsA.workspaceId.toUpperCase()))
  const strangerOnG1 = await connect(t, g1.url, member(wsB.owner, wsB.workspaceId))
  const strangerOnG2 = await connect(t, g2.url, member(wsB.agent, wsB.workspaceId))
  const gina = await connect(t, g2.url, visitor(guestA1))
  const ginaSecondTab = await connect(t, g1.url, visitor(guestA1))
  const gus = await connect(t, g1.url, visitor(guestA2))
  const bea = await connect(t, g2.url, visitor(guestB))
  const all = { agentOnG1, ownerOnG2, adminOnG2, strangerOnG1, strangerOnG2, gina, ginaSecondTab, gus, bea }
  const seen = Object.fromEntries(Object.entries(all).map(([k, s]) => [k, record<{ conversationId: string }>(s, 'message:new')]))

  const conversationId = randomUUID()
  const payload = { conversationId, message: { id: randomUUID(), body: 'Hello from the widget', authorType: 'guest' } }
  // What the REST API does for a visitor's message: the workspace and that conversation's guest.
  app.deps.events.publish([rooms.workspace(wsA.workspaceId), rooms.guest(guestA1.guestId)], 'message:new', payload)

  await barrier([
    { socket: agentOnG1, room: rooms.workspace(wsA.workspaceId) },
    { socket: ownerOnG2, room: rooms.workspace(wsA.workspaceId) },
    { socket: adminOnG2, room: rooms.workspace(wsA.workspaceId) },
    { socket: strangerOnG1, room: rooms.workspace(wsB.workspaceId) },
    { socket: strangerOnG2, room: rooms.workspace(wsB.workspaceId) },
    { socket: gina, room: rooms.guest(guestA1.guestId) },
    { socket: ginaSecondTab, room: rooms.guest(guestA1.guestId) },
    { socket: gus, room: rooms.guest(guestA2.guestId) },
    { socket: bea, room: rooms.guest(guestB.guestId) },
  ])
  for (const name of ['agentOnG1', 'ownerOnG2', 'adminOnG2', 'gina', 'ginaSecondTab']) {
    t.same(seen[name], [payload], `${name} receives the message once`)
  }
  for (const name of ['strangerOnG1', 'strangerOnG2', 'gus', 'bea']) {
    t.same(seen[name], [], `${name} receives nothing`)
  }

  // A workspace-only event (e.g. an internal assignment update) never reaches visitors.
  const updates = Object.fromEntries(Object.entries(all).map(([k, s]) => [k, record<{ conversation?: { id: string } }>(s, 'conversation:updated')]))
  app.deps.events.publish([rooms.workspace(wsA.workspaceId)], 'conversation:updated', { conversation: { id: conversationId, status: 'OPEN' } })
  await barrier([
    { socket: agentOnG1, room: rooms.workspace(wsA.workspaceId) },
    { socket: gina, room: rooms.guest(guestA1.guestId) },
    { socket: bea, room: rooms.guest(guestB.guestId) },
    { socket: strangerOnG2, room: rooms.workspace(wsB.workspaceId) },
  ])
  const real = (name: string) => updates[name].filter((u) => u.conversation)
  t.equal(real('agentOnG1').length, 1, 'members get the update')
  t.equal(real('gina').length, 0, 'the visitor does not get a workspace-only update')
  t.equal(real('bea').length, 0)
  t.equal(real('strangerOnG2').length, 0)
})

t.test('clients cannot join other rooms by asking', async (t) => {
  const gus = await connect(t, g1.url, visitor(guestA2))
  const stranger = await connect(t, g2.url, member(wsB.agent, wsB.workspaceId))
  const gusSeen = record(gus, 'message:new')
  const strangerSeen = record(stranger, 'message:new')
  for (const event of ['join', 'subscribe', 'room:join', 'presence:set']) {
    gus.emit(event, rooms.workspace(wsA.workspaceId))
    gus.emit(event, { room: rooms.guest(guestA1.guestId), status: 'online' })
    stranger.emit(event, rooms.workspace(wsA.workspaceId))
  }
  // A socket id is a room too: knowing another socket's id must not help either.
  const gina = await connect(t, g2.url, visitor(guestA1))
  gus.emit('join', gina.id)
  app.deps.events.publish([rooms.workspace(wsA.workspaceId), rooms.guest(guestA1.guestId)], 'message:new', { conversationId: randomUUID(), message: {} })
  await barrier([
    { socket: gus, room: rooms.guest(guestA2.guestId) },
    { socket: stranger, room: rooms.workspace(wsB.workspaceId) },
  ])
  t.same(gusSeen, [], 'the visitor got nothing of the workspace or another guest')
  t.same(strangerSeen, [], 'a member of another workspace got nothing')
  t.ok(gus.connected && stranger.connected, 'junk events do not break the connection')
})

t.test('delivery latency from the API publisher to members on either gateway', async (t) => {
  const onG1 = await connect(t, g1.url, member(wsA.agent, wsA.workspaceId))
  const onG2 = await connect(t, g2.url, member(wsA.owner, wsA.workspaceId))
  const samples: number[] = []
  for (let i = 0; i < 100; i++) {
    const conversationId = randomUUID()
    const got = [onG1, onG2].map((s) => next<{ conversationId: string }>(s, 'message:new', (p) => p.conversationId === conversationId))
    const start = process.hrtime.bigint()
    app.deps.events.publish([rooms.workspace(wsA.workspaceId)], 'message:new', { conversationId, message: { body: `m${i}` } })
    await Promise.all(got.map((p) => p.then(() => samples.push(Number(process.hrtime.bigint() - start) / 1e6))))
  }
  samples.sort((a, b) => a - b)
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.floor((p / 100) * samples.length))]
  t.comment(`publish -> receive over 2 gateways, ${samples.length} deliveries: p50 ${pct(50).toFixed(2)} ms, p95 ${pct(95).toFixed(2)} ms, p99 ${pct(99).toFixed(2)} ms, max ${samples[samples.length - 1].toFixed(2)} ms`)
  t.ok(pct(99) < 1000, 'members see a message within the same second')
})

t.test('the gateway answers GET /health', async (t) => {
  const res = await fetch(`${g1.url}/health`)
  t.equal(res.status, 200)
  t.match(await res.json(), { status: 'ok', redis: 'online', database: 'online' })
  const missing = await fetch(`${g1.url}/nope`)
  t.equal(missing.status, 404)
  t.match(await missing.json(), { statusCode: 404, code: 'NOT_FOUND' })
})
