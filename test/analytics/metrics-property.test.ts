import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import type { App } from '../../src/app.js'
import { build, seedGuest, seedWorkspace, type SeededGuest, type SeededMember, type SeededWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'
import { rollupState } from './fixtures.js'

/**
 * Random sequences of create / guest message / agent reply / private note / close / reopen /
 * delete / duplicate retry / concurrent closes, through HTTP. Afterwards every metric of /analytics/summary, /agents
 * and /channels equals the one recomputed here from the raw facts (the messages the API stored and
 * the closes and reopens it answered), and the rollups the transactions kept equal a rebuild from
 * the events.
 */

type Op =
  | { k: 'guest' | 'retry' | 'close' | 'closeRace' | 'reopen' | 'delete'; c: number }
  | { k: 'agent' | 'note'; c: number; a: number }
  | { k: 'assign'; c: number; a: number }
  | { k: 'create'; g: number }

const conv = fc.nat({ max: 4 })
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant('guest' as const), c: conv }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('agent' as const), c: conv, a: fc.nat({ max: 2 }) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('note' as const), c: conv, a: fc.nat({ max: 2 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('retry' as const), c: conv }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('close' as const), c: conv }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('closeRace' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('reopen' as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("delete" as const), c: conv }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('assign' as const), c: conv, a: fc.nat({ max: 2 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('create' as const), g: fc.nat({ max: 1 }) }) },
)

/** What the test saw happen to one conversation. */
interface Model {
  id: string
  channelId: string
  guest: SeededGuest
  open: boolean
  assignee: string | null
  /** Start of the current open period (ms) and whether it has had its first response. */
  periodStart: number
  answered: boolean
  lastMessage?: { body: string; clientMessageId: string; headers: Record<string, string>; private?: boolean }
  deleted: boolean
  facts: Facts
}

interface Facts {
  created: { ch: string }[]
  resolved: { ch: string; agent: string | null; seconds: number }[]
  firstResponses: { ch: string; agent: string; seconds: number }[]
  received: { ch: string; agent: string | null }[]
  sent: { ch: string; agent: string }[]
}

const ms = (iso: string) => Date.parse(iso)

function percentileCont(values: number[], p: number): number | null {
  if (values.length === 0) return null
  const v = [...values].sort((a, b) => a - b)
  const r = p * (v.length - 1)
  const lo = Math.floor(r)
  return lo + 1 < v.length ? v[lo] + (v[lo + 1] - v[lo]) * (r - lo) : v[lo]
}

function expected(f: Facts, keep: (x: { ch: string; agent?: string | null }) => boolean) {
  const times = (xs: { seconds: number }[]) => {
    const s = xs.map((x) => x.seconds)
    return { avg: s.length ? s.reduce((a, b) => a + b, 0) / s.length : null, median: percentileCont(s, 0.5), p90: percentileCont(s, 0.9) }
  }
  return {
    conversationsCreated: f.created.filter(keep).length,
    conversationsResolved: f.resolved.filter(keep).length,
    messagesReceived: f.received.filter(keep).length,
    messagesSent: f.sent.filter(keep).length,
    firstResponseTime: times(f.firstResponses.filter(keep)),
    resolutionTime: times(f.resolved.filter(keep)),
  }
}

/** A failed check throws, so fast-check shrinks the sequence and prints it. */
function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what)
}

/** Times the API shows have milliseconds; the events keep microseconds: 2 ms of tolerance. */
function close(actual: any, want: any, what: string) {
  for (const k of ['conversationsCreated', 'conversationsResolved', 'messagesReceived', 'messagesSent']) {
    check(actual[k] === want[k], `${what}: ${k} ${actual[k]} != ${want[k]}`)
  }
  for (const k of ['firstResponseTime', 'resolutionTime']) {
    for (const s of ['avg', 'median', 'p90']) {
      const a = actual[k][s]
      const w = want[k][s]
      check(w === null ? a === null : a !== null && Math.abs(a - w) < 0.002, `${what}: ${k}.${s} ${a} != ${w}`)
    }
  }
}

async function run(app: App, ws: SeededWorkspace, ops: Op[]) {
  const { sql } = app.deps
  const ch2 = randomUUID()
  await sql`INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret) VALUES (${ch2}, ${ws.workspaceId}, 'Second', ${`ct_${ch2}`}, ${`is_${ch2}`})`
  const g0 = await seedGuest(app, ws)
  const g1 = await seedGuest(app, ws)
  await sql`UPDATE guests SET channel_id = ${ch2} WHERE id = ${g1.guestId}`
  const guests: SeededGuest[] = [
    g0,
    { ...g1, channelId: ch2, headers: { 'x-visitor-session': app.deps.visitorTokens.sign({ guestId: g1.guestId, channelId: ch2, workspaceId: ws.workspaceId }).token } },
  ]
  const agents: SeededMember[] = [ws.agent, ws.admin, ws.owner]
  const convs: Model[] = []
  const live = () => convs.filter((c) => !c.deleted)
  const pick = (i: number) => (live().length ? live()[i % live().length] : undefined)

  const create = async (g: SeededGuest) => {
    const c = await startConversation(app, g)
    const facts: Facts = { created: [{ ch: g.channelId }], resolved: [], firstResponses: [], received: [], sent: [] }
    convs.push({ id: c.id, channelId: g.channelId, guest: g, open: true, assignee: null, periodStart: ms(c.createdAt), answered: false, deleted: false, facts })
  }
  await create(guests[0])

  for (const o of ops) {
    if (o.k === 'create') {
      await create(guests[o.g])
      continue
    }
    const c = pick(o.c)
    if (!c) continue
    const facts = c.facts
    const inject = (method: 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: unknown) =>
      app.inject({ method, url, headers, payload: payload as never })
    if (o.k === 'guest' || o.k === 'agent') {
      const member = o.k === 'agent' ? agents[o.a] : null
      const headers = member ? member.headers : c.guest.headers
      const msg = { body: `m ${randomUUID()}`, clientMessageId: randomUUID(), headers }
      const res = await inject('POST', `/conversations/${c.id}/messages`, headers, { body: msg.body, clientMessageId: msg.clientMessageId })
      if (res.statusCode !== 201) throw new Error(`message: ${res.statusCode} ${res.body}`)
      const at = ms(res.json().createdAt)
      c.lastMessage = msg
      if (!member) {
        if (!c.open) {
          c.open = true
          c.periodStart = at
          c.answered = false
        }
        facts.received.push({ ch: c.channelId, agent: c.assignee })
      } else {
        facts.sent.push({ ch: c.channelId, agent: member.userId })
        if (!c.answered) {
          c.answered = true
          facts.firstResponses.push({ ch: c.channelId, agent: member.userId, seconds: (at - c.periodStart) / 1000 })
        }
      }
    } else if (o.k === 'note') {
      // A private note: never a message sent, never a first response, never the last public message.
      const member = agents[o.a]
      const msg = { body: `note ${randomUUID()}`, clientMessageId: randomUUID(), headers: member.headers, private: true }
      const res = await inject('POST', `/conversations/${c.id}/messages`, member.headers, { body: msg.body, clientMessageId: msg.clientMessageId, private: true })
      if (res.statusCode !== 201) throw new Error(`note: ${res.statusCode} ${res.body}`)
      c.lastMessage = msg
    } else if (o.k === 'retry') {
      if (!c.lastMessage) continue
      const m = c.lastMessage
      const res = await inject('POST', `/conversations/${c.id}/messages`, m.headers, { body: m.body, clientMessageId: m.clientMessageId, ...(m.private ? { private: true } : {}) })
      if (res.statusCode !== 200) throw new Error(`retry: ${res.statusCode} ${res.body}`)
    } else if (o.k === 'close' || o.k === 'closeRace') {
      const n = o.k === 'closeRace' ? 3 : 1
      const res = await Promise.all(Array.from({ length: n }, (_, i) => inject('PATCH', `/conversations/${c.id}/close`, agents[i].headers)))
      if (res.some((r) => r.statusCode !== 200)) throw new Error(`close: ${res.map((r) => r.body)}`)
      if (c.open) {
        c.open = false
        facts.resolved.push({ ch: c.channelId, agent: c.assignee, seconds: (ms(res[0].json().closedAt) - c.periodStart) / 1000 })
      }
    } else if (o.k === 'reopen') {
      const res = await inject('PATCH', `/conversations/${c.id}/reopen`, ws.owner.headers)
      if (res.statusCode !== 200) throw new Error(`reopen: ${res.statusCode} ${res.body}`)
      if (!c.open) {
        c.open = true
        c.periodStart = ms(res.json().updatedAt)
        c.answered = false
      }
    } else if (o.k === 'assign') {
      const res = await inject('PATCH', `/conversations/${c.id}/assign-agent`, ws.owner.headers, { agentId: agents[o.a].userId })
      if (res.statusCode !== 200) throw new Error(`assign: ${res.statusCode} ${res.body}`)
      c.assignee = agents[o.a].userId
    } else if (o.k === 'delete') {
      const res = await inject('DELETE', `/conversations/${c.id}`, ws.owner.headers)
      if (res.statusCode !== 204) throw new Error(`delete: ${res.statusCode} ${res.body}`)
      c.deleted = true
    }
  }
  // A deleted conversation leaves every metric: only the others' facts count.
  const facts: Facts = { created: [], resolved: [], firstResponses: [], received: [], sent: [] }
  for (const c of live()) for (const k of Object.keys(facts) as (keyof Facts)[]) (facts[k] as unknown[]).push(...c.facts[k])
  return { facts, agents, channels: [ws.channelId, ch2] }
}

t.test('every metric equals its recomputation from the raw facts', async (t) => {
  const { app } = await build(t)
  let runNo = 0
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const ws = await seedWorkspace(app, `Property ${++runNo}`)
      const { facts, agents, channels } = await run(app, ws, ops)
      const now = Date.now()
      const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`
      const get = async (url: string) => {
        const res = await app.inject({ url, headers: ws.owner.headers })
        if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
        return res.json()
      }
      const summary = await get(`/analytics/summary?${range}`)
      close(summary.current, expected(facts, () => true), 'summary')
      const byAgent = await get(`/analytics/agents?${range}`)
      for (const a of agents) {
        const want = expected(facts, (x) => x.agent === a.userId)
        const row = byAgent.data.find((r: any) => r.userId === a.userId)
        const any = want.conversationsResolved + want.messagesReceived + want.messagesSent + want.firstResponseTime.avg! > 0
        if (!row) {
          check(!any, `agent ${a.role} listed when anything is attributed`)
          continue
        }
        close(row.metrics, want, `agent ${a.role}`)
        const filtered = await get(`/analytics/summary?${range}&agentId=${encodeURIComponent(a.userId)}`)
        close(filtered.current, want, `summary agentId ${a.role}`)
      }
      const byChannel = await get(`/analytics/channels?${range}`)
      for (const ch of channels) {
        const want = expected(facts, (x) => x.ch === ch)
        const row = byChannel.data.find((r: any) => r.channelId === ch)
        if (row) close(row.metrics, want, `channel ${ch}`)
        else check(want.conversationsCreated + want.messagesReceived === 0, 'channel without work is not listed')
      }
      const hours = await get(`/analytics/timeseries?${range}&metric=messagesSent&groupBy=hour`)
      check(hours.data.reduce((a: number, b: any) => a + b.value, 0) === facts.sent.length, 'hour buckets add up')
      // The rollups the transactions kept equal a rebuild from the events.
      const kept = await rollupState(app.deps.sql, ws.workspaceId)
      await app.deps.sql`SELECT metric_rebuild_rollups()`
      const rebuilt = await rollupState(app.deps.sql, ws.workspaceId)
      check(JSON.stringify(rebuilt) === JSON.stringify(kept), `rollups != rebuild from events`)
      return true
    }),
    { numRuns: Number(process.env.PROPERTY_RUNS ?? 20) },
  )
  t.pass('every run matched')
})
