import { randomBytes, randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import t from 'tap'
import { PresenceStore, type PresenceChange } from '../../src/gateway/presence.js'
import type { PresenceStatus } from '../../src/db/schema.js'
import { presenceKeys, readPresence } from '../../src/presence.js'

// The presence script against the real Redis, with a controlled clock: several "gateways" are
// several stores (each with its own connection) sharing one prefix.
const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const clients: Redis[] = []
t.teardown(async () => {
  await Promise.all(clients.map((c) => c.quit()))
})

function gateways(count: number, prefix: string, clock: { now: number }, entryTtlMs = 1000) {
  return Array.from({ length: count }, (_, i) => {
    const redis = new Redis(url)
    clients.push(redis)
    return new PresenceStore({ redis, prefix, gatewayId: `gw${i}`, entryTtlMs, now: () => clock.now })
  })
}
const newPrefix = () => `t:${randomBytes(6).toString('hex')}:`
const statuses = (changes: (PresenceChange | null)[]) => changes.filter((c): c is PresenceChange => c !== null).map((c) => c.status)

t.test('gateways sweeping a dead one at once announce each member offline exactly once', async (t) => {
  const prefix = newPrefix()
  const clock = { now: 1_000_000 }
  const [dead, ...alive] = gateways(6, prefix, clock)
  const ws = randomUUID()
  const users = Array.from({ length: 120 }, (_, i) => `auth0|user-${i}`)
  const up = await Promise.all(users.map((u) => dead.add(ws, u, `s-${u}`)))
  t.equal(statuses(up).filter((s) => s === 'online').length, users.length)
  // One of them also has a tab on a live gateway (refreshed by its heartbeat below).
  await alive[0].add(ws, users[0], 'live-tab')

  clock.now += 1500 // the dead gateway's entries are past their expiry; alive[0]'s heartbeat ran
  await alive[0].touch(new Map([[`${ws}:${users[0]}`, new Set(['live-tab'])]]))
  const swept = (await Promise.all(alive.map((g) => g.sweep(7)))).flat() // small batches: more interleaving
  const offline = swept.filter((c) => c.status === 'offline').map((c) => c.userId).sort()
  t.same(offline, users.slice(1).sort(), 'one offline per member, none for the member with a live tab')
  t.equal(swept.length, users.length - 1, 'nothing else announced')

  const read = await readPresence(clients[1], prefix, ws, users, clock.now)
  t.equal(read[users[0]], 'online')
  t.ok(users.slice(1).every((u) => read[u] === 'offline'), 'readPresence agrees')
  const r = clients[1]
  t.equal(await r.zcard(presenceKeys.sockets(prefix, ws, users[0])), 1, "the dead gateway's entry is gone from the live member")
  t.equal(await r.exists(presenceKeys.sockets(prefix, ws, users[1])), 0, 'no keys left behind')
  t.same(await r.zrange(presenceKeys.index(prefix), '0', '-1'), [`${ws}:${users[0]}`], 'the index holds live members only')
  t.same(await r.hkeys(presenceKeys.state(prefix, ws)), [users[0]])
  t.same((await Promise.all(alive.map((g) => g.sweep()))).flat(), [], 'a second sweep finds nothing')
})

t.test('concurrent tabs on several gateways: one online, one offline', async (t) => {
  const prefix = newPrefix()
  const clock = { now: 5_000_000 }
  const gws = gateways(4, prefix, clock)
  const ws = randomUUID()
  const tabs = Array.from({ length: 24 }, (_, i) => ({ g: gws[i % gws.length], id: `tab${i}` }))
  const up = await Promise.all(tabs.map(({ g, id }) => g.add(ws, 'u1', id)))
  t.same(statuses(up), ['online'])
  const away = await Promise.all(gws.map((g) => g.setStatus(ws, 'u1', 'away')))
  t.same(statuses(away), ['away'])
  const down = await Promise.all(tabs.map(({ g, id }) => g.remove(ws, 'u1', id)))
  t.same(statuses(down), ['offline'])
  t.equal(await clients[0].hexists(presenceKeys.away(prefix, ws), 'u1'), 0, 'away is cleared with the last socket')
  t.same(statuses([await gws[0].setStatus(ws, 'u1', 'away')]), [], 'away without a socket changes nothing')
  t.equal((await readPresence(clients[0], prefix, ws, ['u1'], clock.now)).u1, 'offline')
})

t.test('announced transitions always match the derived status (model check)', async (t) => {
  type Op =
    | { kind: 'add' | 'remove'; gw: number; tab: number }
    | { kind: 'set'; gw: number; status: 'online' | 'away' }
    | { kind: 'wait'; ms: number }
    | { kind: 'touch'; gw: number }
    | { kind: 'sweep'; gw: number }
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constantFrom('add' as const, 'remove' as const), gw: fc.nat(2), tab: fc.nat(3) }),
    fc.record({ kind: fc.constant('set' as const), gw: fc.nat(2), status: fc.constantFrom('online' as const, 'away' as const) }),
    fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 100, max: 1500 }) }),
    fc.record({ kind: fc.constantFrom('touch' as const, 'sweep' as const), gw: fc.nat(2) }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 25 }), async (ops) => {
      const prefix = newPrefix()
      const clock = { now: 10_000_000 }
      const gws = gateways(3, prefix, clock)
      const ws = randomUUID()
      // The model: tabs per gateway with their expiry, the away flag, the last announced status.
      const tabs = new Map<string, number>()
      const local = gws.map(() => new Set<string>())
      let away = false
      let announced: PresenceStatus = 'offline'
      const derive = (): PresenceStatus => {
        for (const [k, exp] of tabs) if (exp < clock.now) tabs.delete(k)
        return tabs.size === 0 ? 'offline' : away ? 'away' : 'online'
      }
      try {
        for (const o of ops) {
          let changes: (PresenceChange | null)[] = []
          if (o.kind === 'wait') {
            clock.now += o.ms
            continue
          }
          const g = gws[o.gw]
          if (o.kind === 'add') {
            local[o.gw].add(`t${o.tab}`)
            tabs.set(`gw${o.gw}:t${o.tab}`, clock.now + 1000)
            changes = [await g.add(ws, 'u', `t${o.tab}`)]
          } else if (o.kind === 'remove') {
            local[o.gw].delete(`t${o.tab}`)
            tabs.delete(`gw${o.gw}:t${o.tab}`)
            changes = [await g.remove(ws, 'u', `t${o.tab}`)]
          } else if (o.kind === 'set') {
            if (derive() !== 'offline') away = o.status === 'away'
            changes = [await g.setStatus(ws, 'u', o.status)]
          } else if (o.kind === 'touch') {
            for (const tab of local[o.gw]) tabs.set(`gw${o.gw}:${tab}`, clock.now + 1000)
            changes = await g.touch(new Map([[`${ws}:u`, local[o.gw]]]))
          } else {
            changes = await g.sweep()
          }
          const expected = derive()
          const got = statuses(changes)
          const want = expected === announced ? [] : [expected]
          // A sweep only looks at members whose every entry expired, and a gateway without a tab
          // of the member refreshes nothing; anything else waits for the next write.
          if (o.kind === 'sweep' && expected !== 'offline') continue
          if (o.kind === 'touch' && local[o.gw].size === 0) continue
          if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${JSON.stringify(o)}: got ${got}, want ${want}`)
          announced = expected
          // Away ends when the script sees the member with no live socket (a gap nobody observed,
          // e.g. a stalled gateway refreshing late, keeps it).
          if (expected === 'offline') away = false
          const read = (await readPresence(clients[0], prefix, ws, ['u'], clock.now)).u
          if (read !== expected) throw new Error(`${JSON.stringify(o)}: readPresence ${read}, want ${expected}`)
        }
      } finally {
        await Promise.all(gws.map((g) => (g as unknown as { redis: Redis }).redis.quit()))
        clients.splice(clients.length - gws.length, gws.length)
      }
    }),
    { numRuns: Number(process.env.PRESENCE_MODEL_RUNS ?? 60) },
  )
  t.pass('model and Redis agree')
})

t.test('visitors: same mechanism; each transition once, whichever gateways race', async (t) => {
  const { readOnlineVisitors, visitorPresenceKeys } = await import('../../src/presence.js')
  const prefix = newPrefix()
  const clock = { now: 2_000_000 }
  const [dead, ...alive] = gateways(5, prefix, clock)
  const ws = randomUUID()
  const guests = Array.from({ length: 60 }, () => randomUUID())
  const up = await Promise.all(guests.map((g) => dead.addVisitor(ws, g, `s-${g}`)))
  t.equal(up.filter((c) => c?.status === 'online').length, guests.length, 'first socket: online, once each')
  t.equal(await dead.addVisitor(ws, guests[0], 'second-tab'), null, 'a second tab: nothing')
  t.equal(await dead.removeVisitor(ws, guests[0], 'second-tab'), null, 'closing one of two: nothing')
  clock.now += 1
  await alive[0].addVisitor(ws, guests[1], 'live-tab')
  t.same((await readOnlineVisitors(clients[1], prefix, ws, 500, clock.now))[0], guests[1], 'the newest connection comes first')

  clock.now += 1500
  await alive[0].touchVisitors(new Map([[`${ws}:${guests[1]}`, new Set(['live-tab'])]]))
  const swept = (await Promise.all(alive.map((g) => g.sweepVisitors(7)))).flat()
  t.same(swept.map((c) => c.guestId).sort(), guests.filter((g) => g !== guests[1]).sort(), 'one offline per visitor of the dead gateway')
  t.ok(swept.every((c) => c.status === 'offline' && c.workspaceId === ws))
  t.same(await readOnlineVisitors(clients[1], prefix, ws, 500, clock.now), [guests[1]])
  t.equal(await clients[1].exists(visitorPresenceKeys.sockets(prefix, guests[2])), 0, 'no keys left behind')
  t.same(await clients[1].zrange(visitorPresenceKeys.index(prefix), '0', '-1'), [`${ws}:${guests[1]}`])
  t.same(await alive[0].removeVisitor(ws, guests[1], 'live-tab'), { workspaceId: ws, guestId: guests[1], status: 'offline' })
})
