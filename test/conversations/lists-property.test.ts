import fc from 'fast-check'
import t from 'tap'
import type { App } from '../../src/app.js'
import { build, seedWorkspace, type SeededWorkspace } from '../helper.js'
import {
  BASE_US,
  insertChannel,
  insertConversations,
  insertGuest,
  referenceOrder,
  type SeedConversation,
  type SeededConversation,
  type SortKey,
} from './seed.js'

/**
 * Property: for random conversations (timestamps drawn from a tiny pool, so ties are everywhere,
 * some only a microsecond apart), random list, sort and filters, and random page sizes, walking
 * every page returns each matching row exactly once, in exactly the order of a reference sort done
 * in JS; rows of another workspace never appear.
 */

// Offsets in microseconds: equal values, 1 µs apart (lost by a JS Date), 1 ms apart, seconds apart.
const OFFSETS = [0, 1, 2, 999, 1000, 1001, 5_000_000]
const stamp = fc.constantFrom(...OFFSETS).map((o) => BASE_US + o)

type Kind = 'open' | 'mine' | 'closed'
const PATH: Record<Kind, string> = { open: '/conversations', mine: '/conversations/Myconversation', closed: '/conversations/closed' }

interface Who {
  ws: SeededWorkspace
  secondChannel: string
  /** Two guests of the workspace; rows belong to one or the other. */
  guests: [string, string]
}

const convArb = fc.record({
  lastMessageAt: stamp,
  createdAt: stamp,
  updatedAt: stamp,
  closedAt: fc.option(stamp, { nil: null, freq: 4 }),
  pinned: fc.boolean(),
  status: fc.constantFrom<'OPEN' | 'RESOLVED' | 'CLOSED'>('OPEN', 'OPEN', 'RESOLVED', 'CLOSED'),
  assignee: fc.constantFrom<null | 'agent' | 'admin'>(null, 'agent', 'admin'),
  unreadCount: fc.constantFrom(0, 0, 1, 3),
  second: fc.boolean(),
  guest: fc.constantFrom<0 | 1>(0, 1),
  deleted: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
})
type ConvData = ReturnType<(typeof convArb)['generate']>['value']

/** The generated data as a seed row of the workspace under test. */
function toSpec(c: ConvData, { ws, secondChannel, guests }: Who): SeedConversation {
  return {
    guestId: guests[c.guest],
    lastMessageAt: c.lastMessageAt,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    closedAt: c.status === 'OPEN' ? null : c.closedAt,
    pinned: c.pinned,
    status: c.status,
    assignedAgentId: c.assignee === null ? null : ws[c.assignee].userId,
    unreadCount: c.unreadCount,
    channelId: c.second ? secondChannel : ws.channelId,
    deletedAt: c.deleted ? BASE_US : null,
  }
}

const queryArb = fc
  .record({
    kind: fc.constantFrom<Kind>('open', 'mine', 'closed'),
    sortBy: fc.constantFrom<SortKey>('lastMessageAt', 'createdAt', 'updatedAt', 'closedAt'),
    sortOrder: fc.constantFrom<'asc' | 'desc'>('asc', 'desc'),
    readStatus: fc.constantFrom('all', 'read', 'unread'),
    unassignedOnly: fc.boolean(),
    channel: fc.constantFrom<'any' | 'main' | 'second'>('any', 'any', 'main', 'second'),
    status: fc.constantFrom(undefined, 'OPEN', 'RESOLVED', 'CLOSED'),
    defaultSort: fc.boolean(),
    limit: fc.integer({ min: 1, max: 7 }),
  })
  .map((q) => ({
    ...q,
    // closedAt is a sort of /closed only; unassignedOnly on the caller's own list is always empty,
    // so it is drawn rarely there.
    sortBy: q.sortBy === 'closedAt' && q.kind !== 'closed' ? ('createdAt' as SortKey) : q.sortBy,
    unassignedOnly: q.kind === 'mine' ? q.unassignedOnly && q.limit === 1 : q.unassignedOnly,
    status: q.kind === 'mine' ? q.status : undefined,
  }))
type Query = ReturnType<(typeof queryArb)['generate']>['value']

function matches(c: SeededConversation, q: Query, who: Who): boolean {
  if (c.workspaceId !== who.ws.workspaceId || c.deletedAt !== null) return false
  if (q.kind === 'open' && c.status !== 'OPEN') return false
  if (q.kind === 'closed' && c.status === 'OPEN') return false
  if (q.kind === 'mine') {
    if (c.assignedAgentId !== who.ws.agent.userId) return false
    if (q.status === 'OPEN' && c.status !== 'OPEN') return false
    if ((q.status === 'RESOLVED' || q.status === 'CLOSED') && c.status === 'OPEN') return false
  }
  if (q.channel === 'main' && c.channelId !== who.ws.channelId) return false
  if (q.channel === 'second' && c.channelId !== who.secondChannel) return false
  if (q.unassignedOnly && c.assignedAgentId !== null) return false
  if (q.readStatus === 'read' && c.unreadCount !== 0) return false
  if (q.readStatus === 'unread' && c.unreadCount === 0) return false
  return true
}

function queryString(q: Query, who: Who, cursor?: string | null): string {
  const p = new URLSearchParams({ limit: String(q.limit) })
  if (!q.defaultSort) {
    p.set('sortBy', q.sortBy)
    p.set('sortOrder', q.sortOrder)
  }
  if (q.readStatus !== 'all' || !q.defaultSort) p.set('readStatus', q.readStatus)
  if (q.unassignedOnly) p.set('unassignedOnly', 'true')
  if (q.channel !== 'any') p.set('channelId', q.channel === 'main' ? who.ws.channelId : who.secondChannel)
  if (q.status) p.set('status', q.status)
  if (cursor) p.set('cursor', cursor)
  return `${PATH[q.kind]}?${p}`
}

function effectiveSort(q: Query): { sortBy: SortKey; sortOrder: 'asc' | 'desc' } {
  if (q.defaultSort) return { sortBy: q.kind === 'closed' ? 'closedAt' : 'lastMessageAt', sortOrder: 'desc' }
  return { sortBy: q.sortBy, sortOrder: q.sortOrder }
}

/** Follows nextCursor to the end; fails on a non-200 or on more pages than rows could fill. */
async function walk(app: App, q: Query, who: Who, maxPages: number, between?: () => Promise<void>): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  for (let page = 0; page <= maxPages; page++) {
    const res = await app.inject({ url: queryString(q, who, cursor), headers: who.ws.agent.headers })
    if (res.statusCode !== 200) throw new Error(`${queryString(q, who, cursor)} -> ${res.statusCode} ${res.body}`)
    const body = res.json() as { data: { id: string }[]; nextCursor: string | null }
    if (body.data.length > q.limit) throw new Error(`page larger than limit ${q.limit}`)
    if (body.nextCursor !== null && body.data.length !== q.limit) throw new Error('short page with a next cursor')
    ids.push(...body.data.map((d) => d.id))
    if (!body.nextCursor) return ids
    cursor = body.nextCursor
    if (between) await between()
  }
  throw new Error(`more than ${maxPages} pages`)
}

t.test('walking all pages returns every matching row exactly once, in reference order', async (t) => {
  const { app } = await build(t)
  // Another tenant with rows on the same instants: never part of any page.
  const other = await seedWorkspace(app, 'Other')
  const foreign = await insertConversations(
    app,
    other,
    OFFSETS.flatMap((o, i) => [
      { lastMessageAt: BASE_US + o, createdAt: BASE_US + o, updatedAt: BASE_US + o, pinned: i % 2 === 0 },
      { status: 'RESOLVED' as const, closedAt: BASE_US + o, pinned: true },
      { status: 'OPEN' as const, assignedAgentId: other.agent.userId },
    ]),
  )
  const foreignIds = new Set(foreign.map((c) => c.id))

  let current: Who | undefined
  let runs = 0
  await fc.assert(
    fc.asyncProperty(
      fc.array(convArb, { maxLength: 30 }),
      fc.array(queryArb, { minLength: 1, maxLength: 3 }),
      fc.integer({ min: 1, max: 6 }),
      async (makers, queries, historyLimit) => {
      runs++
      const ws = await seedWorkspace(app, `P${runs}`)
      current = { ws, secondChannel: await insertChannel(app, ws.workspaceId), guests: [await insertGuest(app, ws), await insertGuest(app, ws)] }
      const rows = await insertConversations(app, ws, makers.map((m) => toSpec(m, current!)))
      for (const q of queries) {
        const { sortBy, sortOrder } = effectiveSort(q)
        const expected = referenceOrder(rows.filter((c) => matches(c, q, current!)), sortBy, sortOrder, q.kind !== 'closed').map((c) => c.id)
        const got = await walk(app, q, current!, rows.length + 2)
        if (got.some((id) => foreignIds.has(id))) throw new Error('a row of another workspace appeared')
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          throw new Error(`order mismatch for ${JSON.stringify(q)}\n got ${got.join(',')}\nwant ${expected.join(',')}`)
        }
      }
      // The guest history: that guest's live rows of any status, newest createdAt first.
      const guestId = current.guests[0]
      const wantHistory = referenceOrder(rows.filter((c) => c.guestId === guestId && c.deletedAt === null), 'createdAt', 'desc', false).map((c) => c.id)
      const gotHistory: string[] = []
      let cursor: string | null = null
      for (let page = 0; page <= rows.length + 1; page++) {
        const res = await app.inject({
          url: `/conversations/guest/${guestId}/history?limit=${historyLimit}${cursor ? `&cursor=${cursor}` : ''}`,
          headers: ws.agent.headers,
        })
        if (res.statusCode !== 200) throw new Error(`history -> ${res.statusCode} ${res.body}`)
        const body = res.json() as { data: { id: string }[]; nextCursor: string | null }
        gotHistory.push(...body.data.map((d) => d.id))
        cursor = body.nextCursor
        if (!cursor) break
      }
      if (JSON.stringify(gotHistory) !== JSON.stringify(wantHistory)) {
        throw new Error(`history mismatch\n got ${gotHistory.join(',')}\nwant ${wantHistory.join(',')}`)
      }
    }),
    { numRuns: 50, seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
  )
  t.ok(runs >= 50, `${runs} random data sets walked`)
})

t.test('rows added between page fetches cause no skip and no duplicate of existing rows', async (t) => {
  const { app } = await build(t)
  let current: Who | undefined
  let runs = 0
  await fc.assert(
    fc.asyncProperty(
      fc.array(convArb, { minLength: 1, maxLength: 25 }),
      fc.array(convArb, { minLength: 1, maxLength: 4 }),
      queryArb,
      async (makers, newMakers, q) => {
        runs++
        const ws = await seedWorkspace(app, `I${runs}`)
        current = { ws, secondChannel: await insertChannel(app, ws.workspaceId), guests: [await insertGuest(app, ws), await insertGuest(app, ws)] }
        const rows = await insertConversations(app, ws, makers.map((m) => toSpec(m, current!)))
        const { sortBy, sortOrder } = effectiveSort(q)
        const expected = referenceOrder(rows.filter((c) => matches(c, q, current!)), sortBy, sortOrder, q.kind !== 'closed').map((c) => c.id)
        const existing = new Set(rows.map((c) => c.id))
        // After each of the first pages, more rows land on the same instants (ties with the cursor
        // included). Only the first few: in ascending order new rows sort after the cursor, and a
        // stream of them as fast as one-row pages are read would never let the walk end.
        const added: string[] = []
        let pages = 0
        const got = await walk(app, q, current!, rows.length + 100, async () => {
          if (++pages > 3) return
          const more = await insertConversations(app, ws, newMakers.map((m) => toSpec(m, current!)))
          added.push(...more.map((c) => c.id))
        })
        if (new Set(got).size !== got.length) throw new Error('an id appeared twice')
        const old = got.filter((id) => existing.has(id))
        if (JSON.stringify(old) !== JSON.stringify(expected)) {
          throw new Error(`existing rows skipped or out of order for ${JSON.stringify(q)}\n got ${old.join(',')}\nwant ${expected.join(',')}`)
        }
        if (got.some((id) => !existing.has(id) && !added.includes(id))) throw new Error('unknown id')
      },
    ),
    { numRuns: 20 },
  )
  t.ok(runs >= 20, `${runs} walks with rows added between pages`)
})
