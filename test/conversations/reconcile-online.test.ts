import t from 'tap'
import postgres from 'postgres'
import { build, seedGuest, seedWorkspace, type SeededGuest, type SeededWorkspace } from '../helper.js'
import { createTestDatabase } from '../setup/database.js'
import type { App } from '../../src/app.js'
import { insertConversations } from './seed.js'

/**
 * Issue 31: counts/reconcile is online. It recounts in keyset batches (RECONCILE_BATCH, 100 here
 * over 6,000 conversations: 60 batches) and takes no workspace-wide lock, so writers go on while
 * it runs; it stays exact: whatever writers do meanwhile, the counters end equal to a brute-force
 * recount and the next reconcile says `corrected: false`.
 *
 * Three apps on one database: the reconciler (application_name 'reconciler', so its backends are
 * known); a writer whose every statement has lock_timeout = 100ms (blocked longer, it fails with a
 * 500), alone, so any wait it sees is the reconciler's; and four concurrent writers without it
 * (they also wait for one another, on counter slots and analytics rollups: not the reconcile's
 * doing), for which only the waits behind a reconciler backend count. A sampler polls pg_locks for waiting backends of this database and
 * records the longest wait behind a reconciler backend.
 */

const N = 6000
const BATCH = 100

function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url)
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v)
  return u.toString()
}

/** Every counter scope recounted in JS from the rows (messages counted one by one), zero scopes left out. */
async function bruteForceScopes(sql: postgres.Sql, workspaceId: string): Promise<Record<string, [number, number]>> {
  const convs = await sql<{ id: string; status: string; channel: string; agent: string | null; team: string | null; deleted: boolean; seen: string | null }[]>`
    SELECT id, status, channel_id AS channel, assigned_agent_id AS agent, team_id AS team, deleted_at IS NOT NULL AS deleted,
           (extract(epoch from agent_last_seen_at) * 1000000)::bigint::text AS seen
    FROM conversations WHERE workspace_id = ${workspaceId}`
  const msgs = await sql<{ c: string; at: string }[]>`
    SELECT conversation_id AS c, (extract(epoch from created_at) * 1000000)::bigint::text AS at
    FROM messages WHERE workspace_id = ${workspaceId} AND sender_type = 'GUEST'`
  const byConv = new Map<string, bigint[]>()
  for (const m of msgs) byConv.set(m.c, [...(byConv.get(m.c) ?? []), BigInt(m.at)])
  const out: Record<string, [number, number]> = {}
  const add = (scope: string, n: number) => {
    const [c, m] = out[scope] ?? [0, 0]
    out[scope] = [c + 1, m + n]
  }
  for (const c of convs) {
    if (c.deleted || c.status !== 'OPEN') continue
    const mark = c.seen === null ? null : BigInt(c.seen)
    const n = (byConv.get(c.id) ?? []).filter((at) => mark === null || at > mark).length
    if (n === 0) continue
    add('all', n)
    add(c.agent ? `agent:${c.agent}` : 'unassigned', n)
    add(`channel:${c.channel}`, n)
    if (c.team) {
      add(`team:${c.team}`, n)
      if (!c.agent) add(`team-unassigned:${c.team}`, n)
      add(`team-channel:${c.team}:${c.channel}`, n)
    }
  }
  return out
}

async function counterScopes(sql: postgres.Sql, workspaceId: string): Promise<Record<string, [number, number]>> {
  const rows = await sql<{ scope: string; c: number; m: number }[]>`
    SELECT scope, sum(conversations)::int AS c, sum(messages)::int AS m FROM unread_counters
    WHERE workspace_id = ${workspaceId} GROUP BY scope`
  return Object.fromEntries(rows.filter((r) => r.c !== 0 || r.m !== 0).map((r) => [r.scope, [r.c, r.m]]))
}

/** The longest lock wait (ms) of this database's backends behind a reconciler backend, sampled every 10 ms. */
function sampleLockWaits(sql: postgres.Sql) {
  let stop = false
  let max = 0
  let samples = 0
  const done = (async () => {
    while (!stop) {
      const [r] = await sql<{ ms: number | null }[]>`
        SELECT max(extract(epoch from clock_timestamp() - l.waitstart) * 1000)::float8 AS ms
        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE NOT l.granted AND a.datname = current_database() AND a.application_name <> 'reconciler'
          AND EXISTS (SELECT 1 FROM pg_stat_activity b
                      WHERE b.pid = ANY(pg_blocking_pids(a.pid)) AND b.application_name = 'reconciler')`
      samples++
      if (r?.ms && r.ms > max) max = r.ms
      await new Promise((res) => setTimeout(res, 10))
    }
  })()
  return {
    async end() {
      stop = true
      await done
      return { max, samples }
    },
  }
}

interface World {
  ws: SeededWorkspace
  /** Each conversation's guest (many guests: a guest message locks its guest row). */
  guestOf: Map<string, SeededGuest>
  ids: string[]
  agents: string[]
}

/** Random operations on random conversations through the writers' app until `until` resolves; returns the failures. */
async function writeUntil(app: App, w: World, until: Promise<unknown>, workers: number): Promise<{ done: number; failed: string[] }> {
  let over = false
  void until.finally(() => (over = true))
  let done = 0
  const failed: string[] = []
  const member = w.ws.admin.headers
  const one = async () => {
    const id = w.ids[Math.floor(Math.random() * w.ids.length)]!
    const r = Math.random()
    const url = `/conversations/${id}`
    const res =
      r < 0.4 ? await app.inject({ method: 'POST', url: `${url}/messages`, headers: w.guestOf.get(id)!.headers, payload: { body: 'more' } })
        : r < 0.55 ? await app.inject({ method: 'PATCH', url: `${url}/mark-seen`, headers: member })
          : r < 0.7 ? await app.inject({ method: 'PATCH', url: `${url}/assign-agent`, headers: member, payload: { agentId: w.agents[Math.floor(Math.random() * w.agents.length)] } })
            : r < 0.78 ? await app.inject({ method: 'PATCH', url: `${url}/unassign-agent`, headers: member })
              : r < 0.86 ? await app.inject({ method: 'PATCH', url: `${url}/close`, headers: member })
                : r < 0.94 ? await app.inject({ method: 'PATCH', url: `${url}/reopen`, headers: member })
                  : await app.inject({ method: 'POST', url: `${url}/messages`, headers: member, payload: { body: 'reply' } })
    // 404: a conversation closed under a guest's message is still there; only 5xx is a failure.
    if (res.statusCode >= 500) failed.push(`${res.statusCode} ${res.body}`)
    done++
  }
  await Promise.all(Array.from({ length: workers }, async () => {
    while (!over) await one()
  }))
  return { done, failed }
}

t.test('reconcile runs online in batches: writers are never held, the counters end exact', async (t) => {
  const db = await createTestDatabase()
  t.teardown(db.drop)
  const reconciler = await build(t, { databaseUrl: withParams(db.url, { application_name: 'reconciler' }), env: { RECONCILE_BATCH: String(BATCH) } })
  const writers = await build(t, { databaseUrl: withParams(db.url, { application_name: 'writers', lock_timeout: '100ms' }), captureLogs: true })
  t.teardown(() => { for (const l of writers.logs) if ((l.level as number) >= 50) console.error(JSON.stringify(l).slice(0, 3000)) })
  const busy = await build(t, { databaseUrl: withParams(db.url, { application_name: 'busy' }) })
  const observer = postgres(db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => observer.end())
  const app = reconciler.app

  const ws = await seedWorkspace(app)
  const guests = await Promise.all(Array.from({ length: 60 }, (_, i) => seedGuest(app, ws, `Guest ${i}`)))
  const agents = [ws.agent.userId, ws.admin.userId, (await ws.addMember('agent')).userId]
  const team = await app.inject({ method: 'POST', url: '/teams', headers: ws.owner.headers, payload: { name: 'Billing' } })
  t.equal(team.statusCode, 201)
  const teamId = team.json().id as string
  const convs = await insertConversations(app, ws, Array.from({ length: N }, (_, i) => ({
    guestId: guests[i % guests.length]!.guestId,
    status: i % 7 === 0 ? 'RESOLVED' as const : 'OPEN' as const,
    assignedAgentId: i % 3 === 0 ? null : agents[i % agents.length]!,
    createdAt: Date.UTC(2026, 10, 1) * 1000 + i * 1_000_000,
  })))
  const ids = convs.map((c) => c.id)
  const guestOf = new Map(convs.map((c, i) => [c.id, guests[i % guests.length]!]))
  // 0-3 guest messages each, an agent's seen mark on some, a team on a third; unread_count
  // stored right, the counters left empty: the first reconcile builds them.
  await app.deps.sql`UPDATE conversations SET team_id = ${teamId} WHERE workspace_id = ${ws.workspaceId} AND (extract(epoch from created_at)::bigint % 3) = 0`
  await app.deps.sql`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    SELECT gen_random_uuid(), c.workspace_id, c.id, 'GUEST', c.guest_id, 'Guest', 'hello ' || k, c.created_at + k * interval '1 second'
    FROM conversations c, generate_series(1, 3) k
    WHERE c.workspace_id = ${ws.workspaceId} AND k <= (extract(epoch from c.created_at)::bigint % 4)`
  await app.deps.sql`UPDATE conversations SET agent_last_seen_at = created_at + interval '1500 ms'
    WHERE workspace_id = ${ws.workspaceId} AND (extract(epoch from created_at)::bigint % 5) = 0`
  await app.deps.sql`
    UPDATE conversations c SET unread_count = (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id AND m.sender_type = 'GUEST'
                                                 AND m.created_at > COALESCE(c.agent_last_seen_at, '-infinity'))
    WHERE workspace_id = ${ws.workspaceId}`
  const reconcile = async () => {
    const res = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })
    t.equal(res.statusCode, 200, res.statusCode === 200 ? 'reconcile 200' : res.body)
    return res.json()
  }
  const first = await reconcile()
  t.equal(first.corrected, true, 'the empty counters were built')
  t.equal(first.conversationsFixed, 0)
  t.same(await counterScopes(app.deps.sql, ws.workspaceId), await bruteForceScopes(app.deps.sql, ws.workspaceId), 'counters = brute force')
  t.equal((await reconcile()).corrected, false, 'and a reconcile finds nothing more')
  const w: World = { ws, guestOf, ids, agents }

  await t.test('writers during reconciles: no false correction, no writer blocked 100 ms', async (t) => {
    const sampler = sampleLockWaits(observer)
    const results: any[] = []
    // Three reconciles back to back while the writers write, from their first write on.
    const recs = (async () => {
      await new Promise((r) => setTimeout(r, 100))
      for (let i = 0; i < 3; i++) results.push(await reconcile())
    })()
    // The strict writer alone: any wait it sees is the reconciler's.
    const writes = await writeUntil(writers.app, w, recs, 1)
    await recs
    const waits = await sampler.end()
    t.same(writes.failed, [], `${writes.done} writes during the reconciles, none failed (lock_timeout 100ms)`)
    t.ok(writes.done >= 5, 'writes ran during the reconciles')
    t.same(results.map((r) => [r.corrected, r.conversationsFixed]), [[false, 0], [false, 0], [false, 0]], 'writes during a reconcile are not drift')
    t.ok(waits.samples > 0)
    t.ok(waits.max < 100, `longest wait of a writer behind the reconciler: ${waits.max.toFixed(1)} ms (${waits.samples} samples)`)
    t.same(await counterScopes(app.deps.sql, ws.workspaceId), await bruteForceScopes(app.deps.sql, ws.workspaceId), 'counters = brute force')

    // Four writers at once, three more reconciles.
    const sampler2 = sampleLockWaits(observer)
    const busyResults: any[] = []
    const recs2 = (async () => {
      await new Promise((r) => setTimeout(r, 100))
      for (let i = 0; i < 3; i++) busyResults.push(await reconcile())
    })()
    const busyWrites = await writeUntil(busy.app, w, recs2, 4)
    await recs2
    const waits2 = await sampler2.end()
    t.same(busyWrites.failed, [], `${busyWrites.done} concurrent writes during the reconciles, none failed`)
    t.same(busyResults.map((r) => [r.corrected, r.conversationsFixed]), [[false, 0], [false, 0], [false, 0]], 'concurrent writes are not drift')
    t.ok(waits2.max < 100, `longest wait behind the reconciler: ${waits2.max.toFixed(1)} ms`)
    t.same(await counterScopes(app.deps.sql, ws.workspaceId), await bruteForceScopes(app.deps.sql, ws.workspaceId), 'counters = brute force')
  })

  await t.test('drift repaired while writers write: exact at the end, the next reconcile says false', async (t) => {
    // Drift on purpose: a counter slot, a scope of nobody, and unread_count of conversations in
    // many batches (the counters keep the old values: the rows drifted, not the counters).
    await app.deps.sql`UPDATE unread_counters SET conversations = conversations + 5, messages = messages + 7
      WHERE workspace_id = ${ws.workspaceId} AND scope = 'all' AND slot = (SELECT min(slot) FROM unread_counters WHERE workspace_id = ${ws.workspaceId} AND scope = 'all')`
    await app.deps.sql`INSERT INTO unread_counters (workspace_id, scope, slot, conversations, messages) VALUES (${ws.workspaceId}, 'agent:ghost', 2, 1, 1)`
    const drifted = ids.filter((_, i) => i % 97 === 0)
    await app.deps.sql`UPDATE conversations SET unread_count = unread_count + 9 WHERE id = ANY(${drifted}::uuid[]) AND deleted_at IS NULL`

    const sampler = sampleLockWaits(observer)
    const rec = reconcile()
    const writes = await writeUntil(busy.app, w, rec, 4)
    const r = await rec
    const waits = await sampler.end()
    t.same(writes.failed, [], `${writes.done} writes during the reconcile, none failed`)
    t.equal(r.corrected, true)
    // A writer may have fixed one of them first (a guest message recounts nothing, but a
    // mark-seen sets 0): at most the drifted ones, and at least one.
    t.ok(r.conversationsFixed > 0 && r.conversationsFixed <= drifted.length, `${r.conversationsFixed} of ${drifted.length} fixed`)
    t.ok(waits.max < 100, `longest wait behind the reconciler: ${waits.max.toFixed(1)} ms`)
    t.same(await counterScopes(app.deps.sql, ws.workspaceId), await bruteForceScopes(app.deps.sql, ws.workspaceId), 'counters = brute force')
    const stored = await app.deps.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM conversations c WHERE workspace_id = ${ws.workspaceId} AND deleted_at IS NULL
        AND unread_count <> (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id AND m.sender_type = 'GUEST'
                              AND m.created_at > COALESCE(c.agent_last_seen_at, '-infinity'))`
    t.equal(stored[0]!.n, 0, 'every unread_count equals its recount')
    const again = await reconcile()
    t.equal(again.corrected, false, 'the next reconcile finds nothing')
    t.same(again.before, again.after)
  })

  await t.test('reconciles at once: the drift is subtracted once, not once per reconcile', async (t) => {
    // The counters' lock held exclusively (nothing in Parley does) stops every reconcile just
    // before it corrects; three reconciles then line up behind it. Each reading the drift on its
    // own and subtracting it would leave the counters off by twice the drift once it is released.
    await app.deps.sql`UPDATE unread_counters SET conversations = conversations + 2, messages = messages + 3
      WHERE workspace_id = ${ws.workspaceId} AND scope = 'all' AND slot = (SELECT min(slot) FROM unread_counters WHERE workspace_id = ${ws.workspaceId} AND scope = 'all')`
    let running: Promise<Awaited<ReturnType<App['inject']>>[]> | undefined
    await observer.begin(async (q) => {
      await q`SELECT pg_advisory_xact_lock(hashtextextended(${`parley:unread:${ws.workspaceId}`}, 0))`
      // Two through the reconciler's pool, one through another app (the writers' app has a
      // lock_timeout of its own and would give up).
      running = Promise.all([reconciler.app, reconciler.app, busy.app].map((a) =>
        a.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })))
      let waiting = 0
      for (let i = 0; i < 400 && waiting < 3; i++) {
        await new Promise((r) => setTimeout(r, 25))
        ;[{ n: waiting }] = await app.deps.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name IN ('reconciler', 'busy') AND wait_event_type = 'Lock'`
      }
      t.equal(waiting, 3, 'three reconciles wait behind the held lock')
    }) // commits: the lock is released
    const all = await running!
    t.same(all.map((r) => r.statusCode), [200, 200, 200])
    t.equal(all.filter((r) => r.json().corrected).length, 1, 'one of them corrected the drift')
    t.same(await counterScopes(app.deps.sql, ws.workspaceId), await bruteForceScopes(app.deps.sql, ws.workspaceId), 'counters = brute force')
    t.equal((await reconcile()).corrected, false, 'the next reconcile finds nothing')
  })
})
