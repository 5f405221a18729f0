import { randomBytes, randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import t from 'tap'
import { MemoryPresenceStore, type MemoryPresenceState, type MemoryVisitorState } from '../../src/gateway/memory-presence.js'
import { memberKey, PresenceStore, type PresenceChange, type PresenceWriter, type VisitorChange } from '../../src/gateway/presence.js'
import { anyMemberOnline, readOnlineVisitors, readOnlineVisitorSet, readPageVisits, readPresence, readVisitorPresence } from '../../src/presence.js'

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
        const anyR = await anyMemberOnline(redis, prefix, ws)
        const anyM = await inMemory[1].anyMemberOnline(ws)
        if (anyR !== anyM) throw new Error(`after ${JSON.stringify(o)}: anyMemberOnline redis ${anyR}, memory ${anyM}`)
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

// Visitors: the same comparison for the visitors' script and the page script. Three guests in
// two workspaces (random UUIDs: guests connected in the same millisecond are ordered by id, as
// Redis orders equal scores); after every step each read the API makes must agree.
const vop = fc.oneof(
  fc.record({ kind: fc.constant('connect' as const), g: fc.nat(1), v: fc.nat(2), s: fc.constantFrom(...sockets) }),
  fc.record({ kind: fc.constant('disconnect' as const), g: fc.nat(1), v: fc.nat(2), s: fc.constantFrom(...sockets) }),
  fc.record({ kind: fc.constant('page' as const), g: fc.nat(1), v: fc.nat(2), page: fc.nat(3) }),
  fc.record({ kind: fc.constant('touch' as const), g: fc.nat(1) }),
  fc.record({ kind: fc.constant('sweep' as const), g: fc.nat(1) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.oneof(fc.constantFrom(500, 1000), fc.integer({ min: 1, max: 1500 })) }),
)
type VOp = typeof vop extends fc.Arbitrary<infer T> ? T : never

async function runVisitorOp(stores: PresenceWriter[], held: Map<string, Set<string>>[], guests: { ws: string; id: string }[], o: VOp) {
  const showV = (c: VisitorChange | null) => (c ? `${c.workspaceId}:${c.guestId}:${c.status}` : null)
  switch (o.kind) {
    case 'connect': {
      const { ws, id } = guests[o.v]
      held[o.g].set(memberKey(ws, id), (held[o.g].get(memberKey(ws, id)) ?? new Set()).add(o.s))
      return showV(await stores[o.g].addVisitor(ws, id, o.s))
    }
    case 'disconnect': {
      const { ws, id } = guests[o.v]
      held[o.g].get(memberKey(ws, id))?.delete(o.s)
      return showV(await stores[o.g].removeVisitor(ws, id, o.s))
    }
    case 'page':
      return stores[o.g].recordPageVisit(guests[o.v].id, { url: `https://shop.example/p${o.page}`, title: `Page ${o.page}` })
    case 'touch':
      return (await stores[o.g].touchVisitors(held[o.g])).map(showV)
    case 'sweep':
      return (await stores[o.g].sweepVisitors()).map(showV).sort()
    default:
      return null
  }
}

async function redisVisitorReads(prefix: string, workspaces: string[], guests: { id: string }[], now: number) {
  const ids = guests.map((g) => g.id)
  return {
    presence: Object.fromEntries(await readVisitorPresence(redis, prefix, ids, now)),
    online: await Promise.all(workspaces.map((ws) => readOnlineVisitors(redis, prefix, ws, 2, now))),
    set: await Promise.all(workspaces.map((ws) => readOnlineVisitorSet(redis, prefix, ws))),
    pages: await Promise.all(ids.map((id) => readPageVisits(redis, prefix, id))),
  }
}

async function memoryVisitorReads(store: MemoryPresenceStore, workspaces: string[], guests: { id: string }[]) {
  const ids = guests.map((g) => g.id)
  return {
    presence: Object.fromEntries(await store.visitors(ids)),
    online: await Promise.all(workspaces.map((ws) => store.onlineVisitors(ws, 2))),
    set: await Promise.all(workspaces.map((ws) => store.onlineVisitorSet(ws))),
    pages: await Promise.all(ids.map((id) => store.pageVisits(id))),
  }
}

t.test('MemoryPresenceStore follows the visitors and page scripts step by step', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(vop, { minLength: 1, maxLength: 50 }), async (ops) => {
      const clock = { now: 1_000_000 }
      const now = () => clock.now
      const prefix = `t:${randomBytes(6).toString('hex')}:`
      const workspaces = [randomUUID(), randomUUID()]
      const guests = [
        { ws: workspaces[0], id: randomUUID() },
        { ws: workspaces[0], id: randomUUID() },
        { ws: workspaces[1], id: randomUUID() },
      ]
      const visitorState: MemoryVisitorState = { guests: new Map(), online: new Map(), pages: new Map(), gates: new Map() }
      const inRedis = [0, 1].map((i) => new PresenceStore({ redis, prefix, gatewayId: `gw${i}`, entryTtlMs: 1000, now }))
      const inMemory = [0, 1].map((i) => new MemoryPresenceStore({ visitorState, gatewayId: `gw${i}`, entryTtlMs: 1000, now }))
      const heldR = [new Map<string, Set<string>>(), new Map<string, Set<string>>()]
      const heldM = [new Map<string, Set<string>>(), new Map<string, Set<string>>()]
      for (const o of ops) {
        if (o.kind === 'tick') {
          clock.now += o.ms
          continue
        }
        const a = await runVisitorOp(inRedis, heldR, guests, o)
        const b = await runVisitorOp(inMemory, heldM, guests, o)
        if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${JSON.stringify(o)}: redis ${JSON.stringify(a)}, memory ${JSON.stringify(b)}`)
        const readR = await redisVisitorReads(prefix, workspaces, guests, clock.now)
        const readM = await memoryVisitorReads(inMemory[1], workspaces, guests)
        if (JSON.stringify(readR) !== JSON.stringify(readM)) throw new Error(`after ${JSON.stringify(o)}: redis ${JSON.stringify(readR)}, memory ${JSON.stringify(readM)}`)
      }
    }),
    { numRuns: Number(process.env.PRESENCE_RUNS ?? 150) },
  )
  t.pass('same visitor transitions and reads')
})

t.test('page visits: one a second, the last 20 kept, in both stores', async (t) => {
  const clock = { now: 3_000_000 }
  const now = () => clock.now
  const prefix = `t:${randomBytes(6).toString('hex')}:`
  const guest = randomUUID()
  const stores: [string, PresenceWriter, () => Promise<unknown>][] = []
  const r = new PresenceStore({ redis, prefix, gatewayId: 'gw', entryTtlMs: 1000, now })
  const m = new MemoryPresenceStore({ gatewayId: 'gw', entryTtlMs: 1000, now })
  stores.push(['redis', r, () => readPageVisits(redis, prefix, guest)], ['memory', m, () => m.pageVisits(guest)])
  for (const [name, store, pages] of stores) {
    clock.now = 3_000_000
    t.ok(await store.recordPageVisit(guest, { url: 'https://shop.example/0', title: '0' }), name)
    clock.now += 999
    t.equal(await store.recordPageVisit(guest, { url: 'https://shop.example/x', title: 'x' }), null, `${name}: within the second, dropped`)
    for (let i = 1; i <= 24; i++) {
      clock.now += 1000
      t.ok(await store.recordPageVisit(guest, { url: `https://shop.example/${i}`, title: String(i) }), `${name} ${i}`)
    }
    const kept = (await pages()) as { url: string }[]
    t.equal(kept.length, 20, `${name}: 20 kept`)
    t.same(kept.map((v) => v.url).slice(0, 2), ['https://shop.example/24', 'https://shop.example/23'], `${name}: newest first`)
  }
})

t.test('anyMemberOnline: announced online counts, away does not, in both stores', async (t) => {
  const prefix = `t:${randomBytes(6).toString('hex')}:`
  const ws = randomUUID()
  const r = new PresenceStore({ redis, prefix, gatewayId: 'gw', entryTtlMs: 30_000 })
  const m = new MemoryPresenceStore({ gatewayId: 'gw', entryTtlMs: 30_000 })
  const pairs: [string, PresenceWriter, () => Promise<boolean>][] = [
    ['redis', r, () => anyMemberOnline(redis, prefix, ws)],
    ['memory', m, () => m.anyMemberOnline(ws)],
  ]
  for (const [name, store, any] of pairs) {
    t.equal(await any(), false, `${name}: nobody`)
    await store.add(ws, 'u1', 's1')
    t.equal(await any(), true, `${name}: online`)
    await store.setStatus(ws, 'u1', 'away')
    t.equal(await any(), false, `${name}: away only`)
    await store.add(ws, 'u2', 's2')
    t.equal(await any(), true, `${name}: another online`)
    await store.remove(ws, 'u2', 's2')
    await store.remove(ws, 'u1', 's1')
    t.equal(await any(), false, `${name}: all gone`)
  }
})
