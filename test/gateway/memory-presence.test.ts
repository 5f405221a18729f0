import { randomBytes, randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import t from 'tap'
import { MemoryPresenceStore, type MemoryPresenceState } from '../../src/gateway/memory-presence.js'
import { memberKey, PresenceStore, type PresenceChange, type PresenceWriter } from '../../src/gateway/presence.js'
import { readPresence } from '../../src/presence.js'

// The in-process presence store of single-process mode against the Redis one (the Lua script):
// the same random sequences of connects, disconnects, presence:set, heartbeats, sweeps and clock
// steps, on two "gateways" each, must give the same announced transitions and the same reads.
const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const redis = new Redis(url)
t.teardown(() => redis.quit())

const users = ['u1', 'auth0|u2', 'u3']
const sockets = ['s1', 's2', 's3']
const op = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), g: fc.nat(1), u: fc.constantFrom(...users), s: fc.constantFrom(...sockets) }),
  fc.record({ kind: fc.constant('remove' as const), g: fc.nat(1), u: fc.constantFrom(...users), s: fc.constantFrom(...sockets) }),
  fc.record({ kind: fc.constant('set' as const), g: fc.nat(1), u: fc.constantFrom(...users), status: fc.constantFrom('online' as const, 'away' as const) }),
  fc.record({ kind: fc.constant('touch' as const), g: fc.nat(1) }),
  fc.record({ kind: fc.constant('sweep' as const), g: fc.nat(1) }),
  // Steps of exactly the entry TTL land on expiry boundaries (a live entry's score equals now).
  fc.record({ kind: fc.constant('tick' as const), ms: fc.oneof(fc.constantFrom(500, 1000), fc.integer({ min: 1, max: 1500 })) }),
)
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never

const show = (c: PresenceChange | null) => (c ? `${c.userId}:${c.status}@${c.at}` : null)

async function runOn(stores: PresenceWriter[], held: Map<string, Set<string>>[], ws: string, o: Op) {
  switch (o.kind) {
    case 'add':
      held[o.g].set(memberKey(ws, o.u), (held[o.g].get(memberKey(ws, o.u)) ?? new Set()).add(o.s))
      return show(await stores[o.g].add(ws, o.u, o.s))
    case 'remove':
      held[o.g].get(memberKey(ws, o.u))?.delete(o.s)
      return show(await stores[o.g].remove(ws, o.u, o.s))
    case 'set':
      return show(await stores[o.g].setStatus(ws, o.u, o.status))
    case 'touch':
      return (await stores[o.g].touch(held[o.g])).map(show)
    case 'sweep':
      return (await stores[o.g].sweep()).map(show).sort()
    default:
      return null
  }
}

t.test('MemoryPresenceStore follows the Redis script step by step', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
      const clock = { now: 1_000_000 }
      const now = () => clock.now
      const prefix = `t:${randomBytes(6).toString('hex')}:`
      const ws = randomUUID()
      const state: MemoryPresenceState = new Map()
      const inRedis = [0, 1].map((i) => new PresenceStore({ redis, prefix, gatewayId: `gw${i}`, entryTtlMs: 1000, now }))
      const inMemory = [0, 1].map((i) => new MemoryPresenceStore({ state, gatewayId: `gw${i}`, entryTtlMs: 1000, now }))
      const heldR = [new Map<string, Set<string>>(), new Map<string, Set<string>>()]
      const heldM = [new Map<string, Set<string>>(), new Map<string, Set<string>>()]
      for (const o of ops) {
        if (o.kind === 'tick') {
          clock.now += o.ms
          continue
        }
        const a = await runOn(inRedis, heldR, ws, o)
        const b = await runOn(inMemory, heldM, ws, o)
        if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${JSON.stringify(o)}: redis ${JSON.stringify(a)}, memory ${JSON.stringify(b)}`)
        const readR = await readPresence(redis, prefix, ws, users, clock.now)
        const readM = await inMemory[0].read(ws, users)
        if (JSON.stringify(readR) !== JSON.stringify(readM)) throw new Error(`after ${JSON.stringify(o)}: redis ${JSON.stringify(readR)}, memory ${JSON.stringify(readM)}`)
      }
    }),
    { numRuns: Number(process.env.PRESENCE_RUNS ?? 150) },
  )
  t.pass('same transitions and reads')
})

t.test('an offline member leaves nothing behind in memory', async (t) => {
  const store = new MemoryPresenceStore({ gatewayId: 'gw', entryTtlMs: 1000 })
  const ws = randomUUID()
  t.match(await store.add(ws, 'u', 's1'), { status: 'online' })
  t.match(await store.setStatus(ws, 'u', 'away'), { status: 'away' })
  t.match(await store.remove(ws, 'u', 's1'), { status: 'offline' })
  t.equal(store.state.size, 0)
  t.same(await store.read(ws, ['u']), { u: 'offline' })
})

t.test('an entry is live up to and including its expiry, in both stores', async (t) => {
  const clock = { now: 2_000_000 }
  const now = () => clock.now
  const prefix = `t:${randomBytes(6).toString('hex')}:`
  const ws = randomUUID()
  for (const store of [new PresenceStore({ redis, prefix, gatewayId: 'gw', entryTtlMs: 1000, now }), new MemoryPresenceStore({ gatewayId: 'gw', entryTtlMs: 1000, now })]) {
    clock.now = 2_000_000
    t.match(await store.add(ws, 'u', 's1'), { status: 'online' })
    clock.now += 1000 // exactly the expiry
    t.match(await store.setStatus(ws, 'u', 'away'), { status: 'away' }, store.constructor.name)
    clock.now += 1
    t.match(await store.sweep(), [{ status: 'offline' }], store.constructor.name)
  }
})
