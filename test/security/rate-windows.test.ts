import { Redis } from 'ioredis'
import pino from 'pino'
import t from 'tap'
import { memoryWindows, redisWindows, withFallback, type RateWindows } from '../../src/rate-windows.js'
import { startOwnRedis } from './redis-server.js'

/**
 * The windows behind every rate limit: one contract run against each implementation (Redis: a
 * server of this file's own), and the fallback wrapper. test/security/redis-down.test.ts proves
 * the fallback through HTTP.
 */

const redisServer = await startOwnRedis(t)
const port = redisServer.port

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
