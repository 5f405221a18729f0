import t from 'tap'
import type { Socket } from 'socket.io-client'
import { readPresence } from '../../src/presence.js'
import { build, memberToken, seedGuest, seedWorkspace, redisOf } from '../helper.js'
import { connect, emitWithAck, eventually, next, record, startGateway, testDatabaseAndPrefix } from './fixtures.js'

interface PresenceEvent {
  userId: string
  status: 'online' | 'away' | 'offline'
  at: string
}

const TTL_S = 3
const started = Date.now()
const env = { PRESENCE_TTL_S: String(TTL_S) }
const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
// The API app and both gateway processes start in parallel (each process takes a second or two).
const [{ app }, g1, g2] = await Promise.all([
  build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix } }),
  startGateway(t, { databaseUrl, redisPrefix, env }),
  startGateway(t, { databaseUrl, redisPrefix, env }),
])
const ws = await seedWorkspace(app)
const auth = (m: { token: string }) => ({ token: m.token, workspaceId: ws.workspaceId })
const presenceOf = async (userId: string) => (await readPresence(redisOf(app), redisPrefix, ws.workspaceId, [userId]))[userId]

// The owner watches the workspace from gateway 1 for the whole file.
const watcher = await connect(t, g1.url, auth(ws.owner))
const events = record<PresenceEvent>(watcher, 'user:presence')
const eventsOf = (userId: string) => events.filter((e) => e.userId === userId).map((e) => e.status)
const nextOf = (userId: string, status: string, timeoutMs = 5000) =>
  next<PresenceEvent>(watcher, 'user:presence', (e) => e.userId === userId && e.status === status, timeoutMs)

t.test('tabs on two gateways, away, and the last tab closing', async (t) => {
  t.comment(`setup took ${Date.now() - started} ms`)
  const agent = ws.agent
  let online = nextOf(agent.userId, 'online')
  const tab1 = await connect(t, g1.url, auth(agent))
  const first = await online
  t.ok(Math.abs(Date.parse(first.at) - Date.now()) < 5000, 'at is the time of the change')
  t.equal(await presenceOf(agent.userId), 'online', 'readPresence agrees')

  const tab2 = await connect(t, g2.url, auth(agent))
  // The gateway records a socket before the client hears `connect`, so closing the other tab
  // right away cannot make the member look offline for a moment.
  tab1.disconnect()
  // A status change is the only way to know nothing was announced in between.
  const away = nextOf(agent.userId, 'away')
  t.same(await emitWithAck(tab2, 'presence:set', { status: 'away' }), { ok: true, status: 'away' })
  await away
  t.same(eventsOf(agent.userId), ['online', 'away'], 'a second tab and closing one of two tabs announce nothing')
  t.equal(await presenceOf(agent.userId), 'away')

  for (const junk of [null, 'away', { status: 'offline' }, { status: 'busy' }, { status: 'away', extra: 1 }, [{ status: 'away' }], { status: 7 }]) {
    // The whole acknowledgement, to the message: the socket protocol's wire format.
    const reply = await emitWithAck(tab2, 'presence:set', junk)
    t.same(reply, { ok: false, code: 'VALIDATION_ERROR', message: "presence:set takes { status: 'online' | 'away' }" }, `junk ${JSON.stringify(junk)} is refused`)
  }
  tab2.emit('presence:set', { status: 'nonsense' }) // no ack callback: ignored, no crash
  t.same(await emitWithAck(tab2, 'presence:set', { status: 'away' }), { ok: true, status: 'away' }, 'away again: no change')
  online = nextOf(agent.userId, 'online')
  await emitWithAck(tab2, 'presence:set', { status: 'online' })
  await online
  t.same(eventsOf(agent.userId), ['online', 'away', 'online'], 'junk and repeats announce nothing')

  await emitWithAck(tab2, 'presence:set', { status: 'away' })
  const offline = nextOf(agent.userId, 'offline')
  tab2.disconnect()
  await offline
  t.same(eventsOf(agent.userId), ['online', 'away', 'online', 'away', 'offline'])
  t.equal(await presenceOf(agent.userId), 'offline')

  // Away does not outlive the member's last socket: the next connection is online.
  online = nextOf(agent.userId, 'online')
  const tab3 = await connect(t, g2.url, auth(agent))
  await online
  t.equal(await presenceOf(agent.userId), 'online')
  const gone = nextOf(agent.userId, 'offline')
  tab3.disconnect()
  await gone
})

t.test('presence:set is rate limited per socket', async (t) => {
  const member = await ws.addMember('agent', 'Flicker')
  const socket = await connect(t, g2.url, auth(member))
  const replies = await Promise.all(Array.from({ length: 21 }, (_, i) => emitWithAck(socket, 'presence:set', { status: i % 2 ? 'online' : 'away' })))
  t.equal(replies.filter((r) => (r as { ok: boolean }).ok).length, 20)
  t.same(replies[20], { ok: false, code: 'RATE_LIMITED', message: 'Too many presence:set calls; retry later' })
  t.ok(socket.connected)
})

t.test('many tabs closing at once announce offline once', async (t) => {
  const member = await ws.addMember('agent', 'Tabby')
  const online = nextOf(member.userId, 'online')
  const tabs: Socket[] = []
  for (let i = 0; i < 6; i++) tabs.push(await connect(t, i % 2 ? g1.url : g2.url, auth(member)))
  await online
  const offline = nextOf(member.userId, 'offline')
  for (const tab of tabs) tab.disconnect()
  await offline
  // Another member's change is the barrier: anything announced for Tabby is in by then.
  const other = await ws.addMember('agent', 'Barrier')
  const barrier = nextOf(other.userId, 'online')
  await connect(t, g2.url, auth(other))
  await barrier
  t.same(eventsOf(member.userId), ['online', 'offline'])
})

t.test('a gateway killed with SIGKILL: its members go offline within the TTL, once', async (t) => {
  const onlyOnG2 = await ws.addMember('agent', 'Kim Killed')
  const onBoth = await ws.addMember('agent', 'Bo Both')
  const up = Promise.all([nextOf(onlyOnG2.userId, 'online'), nextOf(onBoth.userId, 'online')])
  await connect(t, g2.url, auth(onlyOnG2))
  await connect(t, g2.url, auth(onBoth))
  await connect(t, g1.url, auth(onBoth))
  await up

  const offline = nextOf(onlyOnG2.userId, 'offline', TTL_S * 1000 + 3000)
  const killedAt = Date.now()
  g2.proc.kill('SIGKILL')
  await g2.exited
  await offline
  const elapsed = Date.now() - killedAt
  t.comment(`offline announced ${elapsed} ms after SIGKILL (PRESENCE_TTL_S=${TTL_S})`)
  t.ok(elapsed <= TTL_S * 1000, `within the TTL (${elapsed} ms)`)
  t.equal(await presenceOf(onlyOnG2.userId), 'offline', 'readPresence agrees')

  // The member who still has a tab on gateway 1 stays online, even after the dead entries expire.
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(await presenceOf(onBoth.userId), 'online')
  t.same(eventsOf(onBoth.userId), ['online'], 'no offline for a member with a live tab elsewhere')
  t.same(eventsOf(onlyOnG2.userId), ['online', 'offline'], 'offline announced once')

  // Reconnecting (to the surviving gateway) brings the member back.
  const back = nextOf(onlyOnG2.userId, 'online')
  await connect(t, g1.url, auth(onlyOnG2))
  await back
  t.equal(await presenceOf(onlyOnG2.userId), 'online')
})

t.test('a disabled member is disconnected within a heartbeat and goes offline', async (t) => {
  const member = await ws.addMember('agent', 'Dee Disabled')
  const online = nextOf(member.userId, 'online')
  const socket = await connect(t, g1.url, auth(member))
  await online
  const dropped = new Promise<string>((resolve) => socket.once('disconnect', resolve))
  const offline = nextOf(member.userId, 'offline')
  await app.deps.sql`UPDATE members SET status = 'disabled' WHERE user_id = ${member.userId}`
  t.equal(await dropped, 'io server disconnect')
  await offline
  await eventually(async () => (await presenceOf(member.userId)) === 'offline')
})

t.test('a socket is disconnected when its credentials expire', async (t) => {
  const exp = Math.floor(Date.now() / 1000) + 2
  const member = await connect(t, g1.url, { token: await memberToken(ws.agent.userId, { expiresIn: exp }), workspaceId: ws.workspaceId })
  const guest = await seedGuest(app, ws)
  const visitor = await connect(t, g1.url, { visitorSession: guest.session })
  const session = app.deps.visitorTokens.verify(guest.session)
  t.ok(session.exp * 1000 > Date.now() + 60_000, 'the visitor session is long-lived and stays connected')
  const reason = await new Promise<string>((resolve) => member.once('disconnect', resolve))
  t.equal(reason, 'io server disconnect')
  t.ok(Date.now() >= exp * 1000, 'not before the token expired')
  t.ok(visitor.connected)
})

t.test('SIGTERM closes the gateway cleanly', async (t) => {
  const socket = await connect(t, g1.url, auth(ws.admin))
  const dropped = new Promise<string>((resolve) => socket.once('disconnect', resolve))
  g1.proc.kill('SIGTERM')
  const { code } = await g1.exited
  t.equal(code, 0, 'exit code 0')
  t.ok(await dropped, 'clients are disconnected (and would reconnect elsewhere)')
  t.ok(g1.logs.some((l) => l.msg === 'gateway closed'))
})
