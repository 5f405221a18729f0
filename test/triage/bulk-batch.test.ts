import t, { type Test } from 'tap'
import { recordResolved } from '../../src/analytics/record.js'
import type { App } from '../../src/app.js'
import type { Caller } from '../../src/auth/callers.js'
import { contextFor } from '../../src/context.js'
import { BatchAborted } from '../../src/conversations/batch.js'
import { closeConversation, inOneTransaction, mutateConversation, setPinned, updateRow } from '../../src/conversations/lifecycle.js'
import { conflict } from '../../src/errors.js'
import type { Log } from '../../src/logger.js'
import { bulkAction } from '../../src/triage/bulk.js'
import { rollupState } from '../analytics/fixtures.js'
import { build, seedGuest, seedWorkspace, type SeededWorkspace } from '../helper.js'
import { listenEvents, patch, send, startConversation } from '../conversations/fixtures.js'
import { sweepBreaches } from '../../src/sla/breaches.js'
import { createPolicy, getConversation } from '../sla/fixtures.js'

/**
 * A bulk request's one transaction (src/conversations/batch.ts, docs/triage.md "Bulk"): the
 * counters and analytics rollups it applies once before commit equal what single requests would
 * have left, events wait for the commit, a change failing after it wrote aborts the whole (and
 * the bulk then runs each conversation on its own), and concurrent bulks over the same rows in
 * opposite orders neither deadlock nor fall back; the SLA step run once for the whole batch leaves
 * what single requests leave.
 */

/** The kept rollups equal a rebuild from the events. */
async function rollupsExact(app: App, ws: string): Promise<boolean> {
  const kept = await rollupState(app.deps.sql, ws)
  await app.deps.sql`SELECT metric_rebuild_rollups()`
  const rebuilt = await rollupState(app.deps.sql, ws)
  return kept.length > 0 && JSON.stringify(kept) === JSON.stringify(rebuilt)
}

/** A member context whose logger keeps the warnings (a bulk falling back to one transaction per id warns). */
function memberCtx(app: App, ws: SeededWorkspace, warnings: unknown[]) {
  const caller: Caller = { kind: 'member', workspaceId: ws.workspaceId, userId: ws.admin.userId, role: 'admin', name: 'Admin', email: 'admin@example.test' }
  const log: Log = {
    ...app.deps.log,
    warn: (...args: unknown[]) => void warnings.push(args),
    child: () => log,
  } as Log
  return contextFor(app.deps, caller, log)
}

async function openConversations(app: App, ws: SeededWorkspace, n: number): Promise<string[]> {
  const guest = await seedGuest(app, ws)
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const c = await startConversation(app, guest)
    await send(app, guest.headers, c.id, `message ${i}`)
    ids.push(c.id)
  }
  // Some assigned (resolutions attributed to an agent), some not.
  for (const id of ids.slice(0, Math.floor(n / 2))) await patch(app, ws.admin.headers, id, 'assign-agent', { agentId: ws.agent.userId })
  return ids
}

t.test('one transaction: counters and rollups exact, events after commit, failures undo their own change only', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const ids = await openConversations(app, ws, 8)
  const warnings: unknown[] = []
  const ctx = memberCtx(app, ws, warnings)
  const reconcile = async () => (await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })).json().corrected

  await t.test('a bulk close: rows, counters and rollups as single closes', async (t) => {
    const res = await bulkAction(ctx, { ids: ids.slice(0, 4), action: 'close' })
    t.same(res.results.map((r) => r.statusCode), [200, 200, 200, 200])
    t.same(warnings, [], 'applied in the one transaction (no fallback)')
    t.equal(await reconcile(), false, 'the counters applied once equal a recount')
    t.ok(await rollupsExact(app, ws.workspaceId), 'the rollups applied once equal a rebuild from the events')
  })

  await t.test('a bulk delete takes the events out of the rollups exactly', async (t) => {
    const res = await bulkAction(ctx, { ids: [ids[0], ids[4]], action: 'delete' })
    t.same(res.results.map((r) => r.statusCode), [204, 204])
    t.same(warnings, [])
    t.equal(await reconcile(), false)
    t.ok(await rollupsExact(app, ws.workspaceId))
  })

  await t.test('events wait for the commit; a change that fails after writing aborts the whole batch', async (t) => {
    const [a, b] = [ids[5], ids[6]]
    await events.settle()
    events.clear()
    let seenBeforeCommit = -1
    await inOneTransaction(ctx, [a], async (batchCtx) => {
      await closeConversation(batchCtx, a)
      await events.settle()
      seenBeforeCommit = events.events.length
    })
    t.equal(seenBeforeCommit, 0, 'nothing published before the commit')
    const update = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.id === a)
    t.equal(update.payload.conversation.status, 'RESOLVED', 'published after it')

    events.clear()
    const failing = inOneTransaction(ctx, [a, b], async (batchCtx) => {
      await setPinned(batchCtx, a, true)
      await mutateConversation(batchCtx, b, async (sql, row) => {
        // Writes the row and records a resolution (its rollups deferred) ... then fails.
        await updateRow(sql, row.id, sql`pinned = true, status = 'RESOLVED'`)
        await recordResolved(sql, row, new Date().toISOString())
        throw conflict('TEST_REFUSED', 'refused after writing')
      })
    })
    const err = await failing.then(() => null, (e: unknown) => e)
    t.ok(err instanceof BatchAborted && (err.reason as { code?: string }).code === 'TEST_REFUSED', 'the batch is aborted, naming the failure')
    await events.settle()
    t.same(events.events, [], 'nothing published')
    const rows = await app.deps.sql<{ id: string; status: string; pinned: boolean }[]>`SELECT id, status, pinned FROM conversations WHERE id = ANY(${[a, b]}::uuid[])`
    const byId = Object.fromEntries(rows.map((r) => [r.id, r]))
    t.match(byId[a], { pinned: false }, 'the change before it is not committed either')
    t.match(byId[b], { status: 'OPEN', pinned: false }, 'nor the failed one')
    t.equal(await reconcile(), false)
    t.ok(await rollupsExact(app, ws.workspaceId), 'no resolution of the failed one in the rollups')
  })

  await t.test('a bulk whose batch aborts is applied one conversation at a time, with the rows of single requests', async (t) => {
    const labels = []
    for (let i = 0; i < 21; i++) {
      labels.push((await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: `l${i}`, color: '#000000' } })).json().id)
    }
    const [x, full, y] = [ids[1], ids[2], ids[3]]
    await app.inject({ method: 'PUT', url: `/conversations/${full}/labels`, headers: ws.admin.headers, payload: { labelIds: labels.slice(0, 20) } })
    const res = await bulkAction(ctx, { ids: [x, full, y], action: 'labels:add', labelIds: [labels[20]] })
    t.same(res.results, [
      { id: x, statusCode: 200 },
      { id: full, statusCode: 400, code: 'INVALID_LABEL' },
      { id: y, statusCode: 200 },
    ], 'the conversation that would hold 21 labels fails in its row; the others are labelled')
    t.equal(warnings.length, 1, 'after one warning: the one transaction was abandoned')
    warnings.splice(0)
    const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE label_ids @> ${[labels[20]]}::uuid[]`
    t.equal(n, 2)
  })

  await t.test('a transaction that fails as a whole leaves nothing and publishes nothing', async (t) => {
    const c = ids[7]
    await events.settle()
    events.clear()
    await t.rejects(
      inOneTransaction(ctx, [c], async (batchCtx) => {
        await closeConversation(batchCtx, c)
        throw new Error('lost connection')
      }),
    )
    await events.settle()
    t.same(events.events, [], 'no event')
    const [row] = await app.deps.sql<{ status: string }[]>`SELECT status FROM conversations WHERE id = ${c}`
    t.equal(row.status, 'OPEN')
    t.equal(await reconcile(), false)
    t.ok(await rollupsExact(app, ws.workspaceId))
  })
})

t.test('concurrent bulks over the same conversations in opposite orders: no deadlock, no fallback, exact', async (t) => {
  const { app } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const ws = await seedWorkspace(app)
  const ids = await openConversations(app, ws, 30)
  const warnings: unknown[] = []
  const ctx = memberCtx(app, ws, warnings)
  const label = (await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: 'x', color: '#000000' } })).json()
  const reversed = [...ids].reverse()
  const runs = await Promise.all([
    bulkAction(ctx, { ids, action: 'close' }),
    bulkAction(ctx, { ids: reversed, action: 'reopen' }),
    bulkAction(ctx, { ids, action: 'labels:add', labelIds: [label.id] }),
    bulkAction(ctx, { ids: reversed, action: 'priority', priority: 'high' }),
    // Single requests on the same rows at the same time.
    ...ids.slice(0, 5).map((id) => patch(app, ws.agent.headers, id, 'close').then((r) => ({ results: [{ id, statusCode: r.statusCode }] }))),
  ])
  for (const r of runs) t.ok(r.results.every((x) => x.statusCode === 200), 'every row 200')
  t.same(warnings, [], 'every bulk committed in its one transaction')
  const [{ n }] = await app.deps.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM conversations WHERE id = ANY(${ids}::uuid[]) AND priority = 'high' AND label_ids @> ${[label.id]}::uuid[]`
  t.equal(n, ids.length)
  t.equal((await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })).json().corrected, false)
  t.ok(await rollupsExact(app, ws.workspaceId), 'the rollups equal a rebuild from the events')
})

t.test('a bulk with running SLA targets leaves the targets, breaches, status log and metrics single requests leave', async (t) => {
  const { app } = await build(t, { env: { ROUTING_SWEEP_MS: '0', JOBS_WORKER: 'false' } })
  // No sweeper of its own: the test sweeps when it wants breaches recorded.
  const ws = await seedWorkspace(app)
  const warnings: unknown[] = []
  const ctx = memberCtx(app, ws, warnings)
  const { sql } = app.deps
  // Urgent is first (created first): matched again when the priority moves to high (bulk priority vs PATCH priority).
  const urgent = await createPolicy(app, ws, { name: 'Urgent', firstResponseMinutes: 5, resolutionMinutes: 10, appliesTo: { priorities: ['high'] } })
  const policy = await createPolicy(app, ws, { name: 'Std', firstResponseMinutes: 60, nextResponseMinutes: 30, resolutionMinutes: 120 })

  // Pairs built the same way: [bulk's, single's]. Kinds: a guest waiting; answered (first response
  // met, next response running); three hours old (every target overdue at the close); the same
  // already swept (breach rows and flags exist); no policy at all.
  const kinds = ['waiting', 'answered', 'overdue', 'swept', 'none'] as const
  const pairs: Record<(typeof kinds)[number], [string, string]> = {} as never
  for (const kind of kinds) {
    const pair: string[] = []
    for (const side of ['bulk', 'single']) {
      const guest = await seedGuest(app, ws, `${kind}-${side}`)
      const c = await startConversation(app, guest)
      await send(app, guest.headers, c.id, 'hello')
      if (kind !== 'waiting') {
        await patch(app, ws.admin.headers, c.id, 'assign-agent', { agentId: ws.agent.userId })
        await send(app, ws.agent.headers, c.id, 'hi')
        await send(app, guest.headers, c.id, 'still there?')
      }
      pair.push(c.id)
    }
    pairs[kind] = pair as [string, string]
  }
  const overdue = [...pairs.overdue, ...pairs.swept]
  for (const table of ['conversations SET created_at = created_at', 'messages SET created_at = created_at', 'conversation_status_log SET at = at']) {
    const id = table.startsWith('conversations') ? 'id' : 'conversation_id'
    await sql.unsafe(`UPDATE ${table} - interval '3 hours' WHERE ${id} = ANY($1::uuid[])`, [overdue])
  }
  await sql`UPDATE sla_targets SET due_at = due_at - interval '3 hours', started_at = started_at - interval '3 hours' WHERE conversation_id = ANY(${overdue}::uuid[])`
  await sweepBreaches(app.deps)
  await sql`DELETE FROM sla_breaches WHERE conversation_id = ANY(${pairs.overdue}::uuid[])`
  await sql`DELETE FROM metric_events WHERE conversation_id = ANY(${pairs.overdue}::uuid[]) AND kind LIKE 'sla%'`
  await sql`UPDATE sla_targets SET breached = false WHERE conversation_id = ANY(${pairs.overdue}::uuid[])`
  await sql`UPDATE conversations SET sla_policy_id = NULL, sla_due_at = NULL WHERE id = ANY(${pairs.none}::uuid[])`
  await sql`DELETE FROM sla_targets WHERE conversation_id = ANY(${pairs.none}::uuid[])`
  await sql`SELECT metric_rebuild_rollups()`

  /** What the SLA step leaves of one conversation, its times relative to its creation (the pair's two differ by milliseconds). */
  const slaState = async (id: string) => {
    const [c] = await sql<{ policy: string | null; due: boolean; status: string }[]>`
      SELECT sla_policy_id AS policy, sla_due_at IS NOT NULL AS due, status FROM conversations WHERE id = ${id}`
    const targets = await sql`
      SELECT target, cycle, policy_id, breached, due_at IS NULL AS open_ended FROM sla_targets WHERE conversation_id = ${id} ORDER BY target, cycle`
    const breaches = await sql`SELECT target, cycle, policy_id FROM sla_breaches WHERE conversation_id = ${id} ORDER BY target, cycle`
    const metrics = await sql`SELECT kind, seq, agent_id, team_id FROM metric_events WHERE conversation_id = ${id} ORDER BY kind, seq`
    const log = await sql`SELECT status FROM conversation_status_log WHERE conversation_id = ${id} ORDER BY at`
    const view = (await getConversation(app, ws, id)).sla
    return { ...c, targets, breaches, metrics, log, sla: view && { status: view.status, breaches: view.breaches, policyId: view.policyId } }
  }
  const compare = async (t: Test, what: string) => {
    for (const kind of kinds) {
      const [b, s] = await Promise.all(pairs[kind].map(slaState))
      t.same(b, s, `${what}, ${kind}: as the single request left it`)
    }
    t.ok(await rollupsExact(app, ws.workspaceId), 'the rollups equal a rebuild from the events')
  }
  const bulkIds = kinds.map((k) => pairs[k][0])
  const singleIds = kinds.map((k) => pairs[k][1])

  await t.test('close', async (t) => {
    const before = await slaState(pairs.overdue[0])
    t.ok(before.targets.length > 0 && before.breaches.length === 0, 'running, overdue, not yet breached')
    const res = await bulkAction(ctx, { ids: bulkIds, action: 'close' })
    t.ok(res.results.every((r) => r.statusCode === 200))
    t.same(warnings, [], 'applied in the one transaction (no fallback)')
    for (const id of singleIds) t.equal((await patch(app, ws.admin.headers, id, 'close')).statusCode, 200)
    const after = await slaState(pairs.overdue[0])
    t.ok(after.breaches.length > 0 && after.metrics.some((m) => String(m.kind).endsWith('_breached')), 'the close recorded the overdue breaches')
    t.equal((await slaState(pairs.waiting[0])).metrics.filter((m) => m.kind === 'sla_resolution_met').length, 1, 'a resolution met')
    await compare(t, 'close')
  })

  await t.test('reopen (new targets), then priority high (matched to another policy), with a repeated id', async (t) => {
    let res = await bulkAction(ctx, { ids: bulkIds, action: 'reopen' })
    t.ok(res.results.every((r) => r.statusCode === 200))
    for (const id of singleIds) t.equal((await patch(app, ws.admin.headers, id, 'reopen')).statusCode, 200)
    t.ok((await slaState(pairs.waiting[0])).targets.length > 0, 'targets running again')
    await compare(t, 'reopen')
    res = await bulkAction(ctx, { ids: [...bulkIds, bulkIds[0]], action: 'priority', priority: 'high' })
    t.ok(res.results.every((r) => r.statusCode === 200))
    for (const id of singleIds) t.equal((await patch(app, ws.admin.headers, id, 'priority', { priority: 'high' })).statusCode, 200)
    t.same(warnings, [], 'no fallback')
    t.equal((await slaState(pairs.waiting[0])).policy, urgent.id, 'matched to the urgent policy')
    t.not(urgent.id, policy.id)
    await compare(t, 'priority')
  })

  await t.test('delete', async (t) => {
    const res = await bulkAction(ctx, { ids: bulkIds, action: 'delete' })
    t.ok(res.results.every((r) => r.statusCode === 204))
    for (const id of singleIds) t.equal((await app.inject({ method: 'DELETE', url: `/conversations/${id}`, headers: ws.admin.headers, payload: {} })).statusCode, 204)
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sla_targets WHERE conversation_id = ANY(${[...bulkIds, ...singleIds]}::uuid[])`
    t.equal(n, 0, 'no targets left')
    const due = await sql`SELECT id FROM conversations WHERE id = ANY(${[...bulkIds, ...singleIds]}::uuid[]) AND sla_due_at IS NOT NULL`
    t.equal(due.length, 0, 'no due date left')
    t.same(warnings, [])
  })
})
