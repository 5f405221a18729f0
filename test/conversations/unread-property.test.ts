import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import type { App } from '../../src/app.js'
import { build, seedGuest, seedWorkspace, type SeededWorkspace } from '../helper.js'
import { sweepSnoozed } from '../../src/triage/wake.js'
import { bruteForceCounts, startConversation } from './fixtures.js'

/**
 * Random sequences of every operation that moves the unread counters, some of them run
 * concurrently (reconcile among them), through HTTP. After each sequence: reconcile finds
 * nothing to correct, and unread-count and every conversation's unreadCount equal a brute-force
 * recount from the rows.
 */

type Op =
  | { k: 'guestMsg' | 'agentMsg' | 'seen' | 'visitorSeen' | 'close' | 'reopen' | 'delete' | 'unassign' | 'retry' | 'pending'; c: number }
  | { k: 'snooze'; c: number; timed: boolean }
  | { k: 'wake'; c: number }
  | { k: 'assign'; c: number; a: number }
  | { k: 'create'; g: number }
  | { k: 'reconcile' }

const conv = fc.nat({ max: 5 })
const single: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant('guestMsg' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('retry' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('agentMsg' as const), c: conv }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('seen' as const), c: conv }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('visitorSeen' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('close' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('reopen' as const), c: conv }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('delete' as const), c: conv }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('assign' as const), c: conv, a: fc.nat({ max: 2 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('unassign' as const), c: conv }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('create' as const), g: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.constant({ k: 'reconcile' as const }) },
  // Section 17: PENDING and SNOOZED leave the counts; a guest message, a reopen or a timed
  // wake-up (the sweep, run at once on a snooze made due) brings them back.
  { weight: 2, arbitrary: fc.record({ k: fc.constant('pending' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('snooze' as const), c: conv, timed: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('wake' as const), c: conv }) },
)
/** A step is one operation, or several sent at once. */
const step = fc.oneof(
  { weight: 3, arbitrary: single.map((op) => [op]) },
  { weight: 2, arbitrary: fc.array(single, { minLength: 2, maxLength: 5 }) },
)

interface World {
  ws: SeededWorkspace
  agents: SeededWorkspace['agent'][]
  guests: { headers: Record<string, string>; guestId: string; channelId: string }[]
  convs: { id: string; guest: number }[]
}

async function setUp(app: App): Promise<World> {
  const ws = await seedWorkspace(app)
  // A second channel, so channel scopes are exercised.
  const ch2 = randomUUID()
  await app.deps.sql`INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
                VALUES (${ch2}, ${ws.workspaceId}, 'Second', ${`ct_${ch2}`}, ${`is_${ch2}`})`
  const g0 = await seedGuest(app, ws)
  const g1 = await seedGuest(app, ws)
  const g2 = await seedGuest(app, ws)
  await app.deps.sql`UPDATE guests SET channel_id = ${ch2} WHERE id = ${g2.guestId}`
  const g2headers = { 'x-visitor-session': app.deps.visitorTokens.sign({ guestId: g2.guestId, channelId: ch2, workspaceId: ws.workspaceId }).token }
  const guests = [
    { headers: g0.headers, guestId: g0.guestId, channelId: ws.channelId },
    { headers: g1.headers, guestId: g1.guestId, channelId: ws.channelId },
    { headers: g2headers, guestId: g2.guestId, channelId: ch2 },
  ]
  const convs = []
  for (const g of [0, 1, 2]) {
    const c = await startConversation(app, { ...g0, ...guests[g] } as never)
    convs.push({ id: c.id, guest: g })
  }
  return { ws, agents: [ws.owner, ws.admin, ws.agent], guests, convs }
}

let retrySeq = 0

async function run(app: App, w: World, op: Op): Promise<{ op: Op; status: number; body: string }> {
  const pick = (c: number) => w.convs[c % w.convs.length]
  const member = w.ws.admin.headers
  const url = (c: number, action: string) => `/conversations/${pick(c).id}/${action}`
  let res
  switch (op.k) {
    case 'guestMsg':
    case 'retry': {
      const c = pick(op.c)
      // A retry resends the same clientMessageId twice at once: it must count once.
      const clientMessageId = op.k === 'retry' ? `r-${retrySeq++}` : undefined
      const send = () => app.inject({ method: 'POST', url: url(op.c, 'messages'), headers: w.guests[c.guest].headers, payload: { body: 'hello', clientMessageId } })
      res = op.k === 'retry' ? (await Promise.all([send(), send()]))[0] : await send()
      break
    }
    case 'agentMsg':
      res = await app.inject({ method: 'POST', url: url(op.c, 'messages'), headers: member, payload: { body: 'reply' } })
      break
    case 'seen':
      res = await app.inject({ method: 'PATCH', url: url(op.c, 'mark-seen'), headers: member })
      break
    case 'visitorSeen':
      res = await app.inject({ method: 'PATCH', url: url(op.c, 'mark-seen'), headers: w.guests[pick(op.c).guest].headers })
      break
    case 'close':
    case 'reopen':
    case 'unassign':
      res = await app.inject({ method: 'PATCH', url: url(op.c, op.k === 'unassign' ? 'unassign-agent' : op.k), headers: member })
      break
    case 'assign':
      res = await app.inject({ method: 'PATCH', url: url(op.c, 'assign-agent'), headers: member, payload: { agentId: w.agents[op.a].userId } })
      break
    case 'delete':
      res = await app.inject({ method: 'DELETE', url: `/conversations/${pick(op.c).id}`, headers: w.ws.owner.headers })
      break
    case 'create': {
      const g = w.guests[op.g]
      res = await app.inject({ method: 'POST', url: '/conversations', headers: g.headers, payload: { channelId: g.channelId, guestId: g.guestId } })
      if (res.statusCode === 201) w.convs.push({ id: res.json().id, guest: op.g })
      break
    }
    case 'reconcile':
      res = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: w.ws.owner.headers })
      break
    case 'pending':
      res = await app.inject({ method: 'PATCH', url: url(op.c, 'pending'), headers: member })
      break
    case 'snooze': {
      const until = op.timed ? new Date(Date.now() + 3600_000).toISOString() : null
      res = await app.inject({ method: 'PATCH', url: url(op.c, 'snooze'), headers: member, payload: { until } })
      break
    }
    case 'wake': {
      // Makes a timed snooze due now and sweeps, as a replica's timer would.
      await app.deps.sql`UPDATE conversations SET snoozed_until = now() - interval '1 second'
                         WHERE id = ${pick(op.c).id} AND status = 'SNOOZED' AND snoozed_until IS NOT NULL`
      await sweepSnoozed(app.deps)
      res = { statusCode: 200, body: '' }
      break
    }
  }
  return { op, status: res.statusCode, body: res.body }
}

t.test('unread counters never drift, whatever the operations and their interleaving', async (t) => {
  const { app } = await build(t, { env: { DATABASE_POOL_MAX: '8' } })
  let runs = 0
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
      runs++
      const w = await setUp(app)
      for (const ops of steps) {
        const results = await Promise.all(ops.map((op) => run(app, w, op)))
        for (const r of results) {
          // 404 only for a conversation deleted earlier (or in the same concurrent step).
          if (![200, 201, 204, 404].includes(r.status)) throw new Error(`${JSON.stringify(r.op)} answered ${r.status} ${r.body}`)
          if (r.op.k === 'reconcile' && JSON.parse(r.body).corrected !== false) {
            throw new Error(`concurrent reconcile corrected: ${r.body}`)
          }
        }
      }
      const rec = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: w.ws.admin.headers })
      if (rec.json().corrected !== false) throw new Error(`reconcile corrected after ${JSON.stringify(steps)}: ${rec.body}`)
      for (const m of w.agents) {
        const brute = await bruteForceCounts(app, w.ws.workspaceId, m.userId)
        const res = await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: m.headers })
        if (JSON.stringify(sortKeys(res.json())) !== JSON.stringify(sortKeys(brute.counts))) {
          throw new Error(`unread-count ${res.body} != brute force ${JSON.stringify(brute.counts)}`)
        }
        for (const [id, n] of Object.entries(brute.unreadById)) {
          if (brute.storedById[id] !== n) throw new Error(`conversation ${id}: unreadCount ${brute.storedById[id]} != recount ${n}`)
        }
      }
    }),
    { numRuns: Number(process.env.PROPERTY_RUNS ?? 12) },
  )
  t.ok(runs > 0, `${runs} random sequences`)
})

function sortKeys(o: { byChannel: Record<string, number> } & Record<string, unknown>) {
  return { ...o, byChannel: Object.fromEntries(Object.entries(o.byChannel).sort()) }
}
