import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import pino from 'pino'
import t from 'tap'
import { memoryWindows, redisWindows, withFallback, type RateWindows } from '../../src/rate-windows.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'

/**
 * The windows behind every rate limit: one contract run against each implementation, and the
 * fallback proved the only honest way: a Redis of this file's own (the machine's is shared) that
 * the test kills under a running app.
 */

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function contract(name: string, make: () => RateWindows) {
  t.test(`${name}: counts per key in fixed windows; read does not count`, async (t) => {
    const w = make()
    t.same(await w.read('a'), { current: 0, ttl: 0 }, 'no window yet')
    const first = await w.incr('a', 400)
    t.equal(first.current, 1)
    t.ok(first.ttl > 0 && first.ttl <= 400, `ttl ${first.ttl}`)
    t.equal((await w.incr('a', 400)).current, 2)
    t.equal((await w.read('a')).current, 2, 'read answers the count')
    t.equal((await w.read('a')).current, 2, 'and does not add to it')
    t.equal((await w.incr('b', 400)).current, 1, 'keys are independent')
    await sleep(450)
    t.equal((await w.read('a')).current, 0, 'the window ended')
    t.equal((await w.incr('a', 400)).current, 1, 'a new window starts')
  })
}

const redis = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, enableOfflineQueue: false })
redis.on('error', () => {})
await new Promise((r) => redis.once('ready', r))
t.teardown(() => redis.disconnect())
contract('redis', () => redisWindows(redis, `rw:${Date.now()}:`))
contract('memory', () => memoryWindows())

t.test('memory windows stay bounded under a flood of keys', async (t) => {
  const w = memoryWindows(100)
  for (let i = 0; i < 1000; i++) await w.incr(`k${i}`, 60_000)
  t.equal((await w.read('k999')).current, 1, 'the newest keys are kept')
  t.equal((await w.read('k0')).current, 0, 'the oldest were dropped')
})

t.test('the fallback counts in memory while the primary fails, with the same numbers', async (t) => {
  let down = false
  const primary = memoryWindows()
  const failing: RateWindows = {
    incr: (k, ms) => (down ? Promise.reject(new Error('down')) : primary.incr(k, ms)),
    read: (k) => (down ? Promise.reject(new Error('down')) : primary.read(k)),
  }
  const w = withFallback(failing, memoryWindows(), pino({ level: 'silent' }))
  t.equal((await w.incr('k', 60_000)).current, 1)
  down = true
  t.equal((await w.incr('k', 60_000)).current, 1, 'the fallback starts its own window')
  t.equal((await w.incr('k', 60_000)).current, 2)
  t.equal((await w.read('k')).current, 2)
  down = false
  t.equal((await w.incr('k', 60_000)).current, 2, 'back on the primary')
})

t.test('Redis down: the limits are still enforced (no skipOnError)', async (t) => {
  const { app } = await build(t, {
    env: { REDIS_URL: `redis://127.0.0.1:${port}`, VISITOR_MESSAGES_PER_MIN: '3', AUTH_RATE_LIMIT_PER_MIN: '2', JOBS_WORKER: 'false' },
  })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const created = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: guest.guestId } })
  t.equal(created.statusCode, 201)
  const conv = created.json()
  const post = () => app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers: guest.headers, payload: { body: 'hi' } })
  const boot = () => app.inject({ method: 'POST', url: '/auth', payload: { channelId: ws.channelId, name: 'G', email: 'g@example.test' }, remoteAddress: '203.0.113.5' })

  t.equal((await post()).statusCode, 201, 'one message while Redis is up')
  await stopRedis()
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 503, 'Redis is down')
  const during = [(await post()).statusCode, (await post()).statusCode, (await post()).statusCode, (await post()).statusCode]
  t.same(during, [201, 201, 201, 429], 'the same 3 a minute, counted in this process')
  t.same([(await boot()).statusCode, (await boot()).statusCode, (await boot()).statusCode], [201, 201, 429], 'POST /auth too')
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${conv.id}`
  t.equal(n, 4, 'one before the outage, three during it')
})
