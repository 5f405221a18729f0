import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import pino from 'pino'
import t from 'tap'
import { createPublisher, rooms } from '../../src/events.js'
import { readPresence } from '../../src/presence.js'
import { build, seedWorkspace } from '../helper.js'
import { connect, emitWithAck, eventually, next, startGateway, testDatabaseAndPrefix } from './fixtures.js'

// A Redis of this file's own (STACK.md: tests that stop a dependency start their own), stopped
// and started again under a running gateway process.
async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const { port } = srv.address() as { port: number }
  await new Promise((r) => srv.close(r))
  return port
}

const port = await freePort()
let redisProc: ChildProcess | undefined
async function startRedis() {
  redisProc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null })
  probe.on('error', () => {}) // refused until the server is up
  await probe.connect().catch(() => {})
  await probe.ping()
  probe.disconnect()
}
async function stopRedis() {
  const proc = redisProc!
  const exited = new Promise((r) => proc.once('exit', r))
  proc.kill('SIGKILL')
  await exited
}
t.teardown(async () => {
  if (redisProc && redisProc.exitCode === null && redisProc.signalCode === null) await stopRedis()
})
await startRedis()

const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
const redisUrl = `redis://127.0.0.1:${port}`
const [{ app }, gateway] = await Promise.all([
  build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix } }),
  startGateway(t, { databaseUrl, redisPrefix, env: { REDIS_URL: redisUrl, PRESENCE_TTL_S: '3' } }),
])
const ws = await seedWorkspace(app)
const presenceOf = async (userId: string) => {
  const r = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  try {
    return (await readPresence(r, redisPrefix, ws.workspaceId, [userId]))[userId]
  } finally {
    r.disconnect()
  }
}
const health = async () => {
  const res = await fetch(`${gateway.url}/health`)
  return { status: res.status, body: (await res.json()) as { redis: string } }
}

t.test('the gateway survives a Redis restart and restores presence and delivery', async (t) => {
  const agent = await connect(t, gateway.url, { token: ws.agent.token, workspaceId: ws.workspaceId })
  await eventually(async () => (await presenceOf(ws.agent.userId)) === 'online')
  t.equal((await health()).status, 200)

  await stopRedis()
  const downAt = Date.now()
  const down = await health()
  t.equal(down.status, 503, 'health reports Redis down')
  t.equal(down.body.redis, 'offline')
  t.ok(Date.now() - downAt < 3000, 'and answers quickly')
  t.match(await emitWithAck(agent, 'presence:set', { status: 'away' }), { ok: false, code: 'UNAVAILABLE' }, 'presence:set says it failed')
  t.ok(agent.connected, 'sockets stay connected')

  // A fresh, empty Redis on the same address (nothing is kept on disk).
  await startRedis()
  await eventually(async () => (await health()).status === 200, 10_000)
  await eventually(async () => (await presenceOf(ws.agent.userId)) === 'online', 10_000)
  t.pass('the next heartbeat wrote the live socket back')

  // The adapter re-subscribed: the API's events flow again.
  const publisherRedis = new Redis(port, '127.0.0.1')
  t.teardown(() => publisherRedis.quit())
  const publisher = createPublisher(publisherRedis, redisPrefix, pino({ level: 'silent' }))
  const conversationId = randomUUID()
  await eventually(async () => {
    const got = next<{ conversationId: string }>(agent, 'message:new', (p) => p.conversationId === conversationId, 300)
    publisher.publish([rooms.workspace(ws.workspaceId)], 'message:new', { conversationId, message: {} })
    return got.then(
      () => true,
      () => false,
    )
  }, 10_000)
  t.pass('delivery resumed')
  t.equal(gateway.proc.exitCode, null, 'the gateway process is still running')
  t.ok(gateway.logs.some((l) => l.msg === 'redis error'), 'the outage was logged')
})
