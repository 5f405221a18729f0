import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createVisitorTokens } from '../../src/auth/tokens.js'
import type { Config } from '../../src/config.js'
import { PresenceStore } from '../../src/gateway/presence.js'
import { resultOf, type Area } from '../lib/area.js'
import { step } from '../lib/progress.js'
import { target } from '../lib/report.js'

/**
 * Routing (issue 26, docs/routing.md): 200 agents online in 10 teams (5 round_robin, 5 balanced,
 * capacity 5 each: 1,000 slots) of a workspace of its own; visitors create ROUTED conversations
 * at a steady rate from 50 connections (one guest each time, so no per-guest cap applies); each
 * conversation's creation-to-assignment time comes from the database (the AUTO history entry
 * minus created_at). Targets: p99 < 500 ms, zero capacity violations, balanced teams' spread
 * (most minus fewest open per agent) <= 1 at the end. `list-team`: GET /conversations?teamId=
 * page 1 in the largest workspace, a tenth of its conversations moved into one team.
 */
const TEAMS = 10
const PER_TEAM = 20
const CAPACITY = 5
const ROUTED = Number(process.env.BENCH_ROUTED ?? 800)
const CONNECTIONS = 50

export const routing: Area = {
  name: 'routing',
  ids: [
    { id: 'routing', about: 'visitors create conversations for 10 teams of 20 online agents; creation-to-assignment p99, capacity violations, balanced spread' },
    { id: 'list-team', about: '`GET /conversations?teamId=` page 1 in the largest workspace (a tenth of it in one team)' },
  ],
  async prepare(run, wanted) {
    const { sql, api, seed } = run
    const scenarios = []
    let outcome: Record<string, unknown> = {}

    if (wanted('list-team')) {
      // A kept database (--db) may hold the team from an earlier run, ended before its cleanup.
      const [kept] = await sql<{ id: string }[]>`SELECT id FROM teams WHERE workspace_id = ${seed.largest.id} AND name = 'Bench list team'`
      const teamId = kept?.id ?? randomUUID()
      if (!kept) await sql`INSERT INTO teams (id, workspace_id, name) VALUES (${teamId}, ${seed.largest.id}, 'Bench list team')`
      await sql`
        UPDATE conversations SET team_id = ${teamId}
        WHERE workspace_id = ${seed.largest.id} AND (('x' || substr(md5(id::text), 1, 8))::bit(32)::int % 10) = 0`
      await sql`ANALYZE conversations`
      scenarios.push({
        id: 'list-team',
        label: `GET /conversations?teamId= (${seed.largest.size} conv. workspace)`,
        kind: 'read' as const,
        method: 'GET' as const,
        path: `/conversations?teamId=${teamId}`,
        headers: run.headers.largest,
      })
    }

    if (wanted('routing')) {
      const workspaceId = randomUUID()
      await sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'Routing Co')`
      const teams: { id: string; channelId: string; mode: 'round_robin' | 'balanced'; members: string[] }[] = []
      for (let i = 0; i < TEAMS; i++) {
        const team = { id: randomUUID(), channelId: randomUUID(), mode: i % 2 === 0 ? ('round_robin' as const) : ('balanced' as const), members: [] as string[] }
        for (let j = 0; j < PER_TEAM; j++) team.members.push(`bench-routing|${i}-${j}`)
        teams.push(team)
        await sql`INSERT INTO teams (id, workspace_id, name, assignment, capacity) VALUES (${team.id}, ${workspaceId}, ${`Team ${i}`}, ${team.mode}, ${CAPACITY})`
        await sql`
          INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret, default_team_id)
          VALUES (${team.channelId}, ${workspaceId}, ${`Channel ${i}`}, ${`ct_${randomUUID()}`}, ${`is_${randomUUID()}`}, ${team.id})`
        await sql`INSERT INTO members (workspace_id, user_id, name, role) SELECT ${workspaceId}, u, u, 'agent' FROM unnest(${team.members}::text[]) u`
        await sql`INSERT INTO team_members (team_id, workspace_id, user_id) SELECT ${team.id}, ${workspaceId}, u FROM unnest(${team.members}::text[]) u`
      }
      // Online as a gateway records it (the API reads the same Redis keys).
      const redis = new Redis(run.redis.url)
      const presence = new PresenceStore({ redis, prefix: run.redis.prefix, gatewayId: randomUUID(), entryTtlMs: 3_600_000 })
      for (const t of teams) await Promise.all(t.members.map((u) => presence.add(workspaceId, u, randomUUID())))
      await redis.quit()
      const tokens = createVisitorTokens({ VISITOR_SESSION_SECRET: run.secrets.VISITOR_SESSION_SECRET, VISITOR_SESSION_TTL_S: 3600 } as unknown as Config)
      const visitors = Array.from({ length: ROUTED }, (_, i) => ({ guestId: randomUUID(), channelId: teams[i % TEAMS].channelId }))
      await sql`
        INSERT INTO guests (id, workspace_id, channel_id, name)
        SELECT g, ${workspaceId}, c, 'Bench visitor' FROM unnest(${visitors.map((v) => v.guestId)}::uuid[], ${visitors.map((v) => v.channelId)}::uuid[]) AS x(g, c)`

      scenarios.push({
        id: 'routing',
        label: `routing: ${ROUTED} conversations, ${TEAMS} teams x ${PER_TEAM} online agents, capacity ${CAPACITY}`,
        kind: 'write' as const,
        method: 'POST' as const,
        path: '/conversations',
        measure: async () => {
          step(`routing: ${ROUTED} conversations from ${CONNECTIONS} connections`)
          let next = 0
          let failed = 0
          const started = Date.now()
          await Promise.all(
            Array.from({ length: CONNECTIONS }, async () => {
              while (next < visitors.length) {
                const v = visitors[next++]
                const { token } = tokens.sign({ guestId: v.guestId, channelId: v.channelId, workspaceId })
                const res = await fetch(`${api.url}/conversations`, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json', 'x-visitor-session': token },
                  body: JSON.stringify({ channelId: v.channelId, guestId: v.guestId }),
                })
                if (res.status !== 201) failed++
                await res.arrayBuffer()
              }
            }),
          )
          const elapsed = (Date.now() - started) / 1000
          // Every conversation fits (800 < 1,000 slots): wait for the last assignment (sweep included).
          const deadline = Date.now() + 10_000
          for (;;) {
            const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE workspace_id = ${workspaceId} AND queued_at IS NOT NULL`
            if (n === 0 || Date.now() > deadline) break
            await new Promise((r) => setTimeout(r, 100))
          }
          const lat = await sql<{ ms: number }[]>`
            SELECT extract(epoch FROM h.created_at - c.created_at) * 1000 AS ms
            FROM conversations c JOIN assignment_history h ON h.conversation_id = c.id AND h.reason = 'AUTO'
            WHERE c.workspace_id = ${workspaceId} ORDER BY 1`
          const [{ over }] = await sql<{ over: number }[]>`
            SELECT count(*)::int AS over FROM (
              SELECT assigned_agent_id, count(*) AS n FROM conversations
              WHERE workspace_id = ${workspaceId} AND status = 'OPEN' AND assigned_agent_id IS NOT NULL GROUP BY 1) x
            WHERE n > ${CAPACITY}`
          const spreads = await sql<{ teamId: string; spread: number }[]>`
            SELECT tm.team_id AS "teamId", max(coalesce(n, 0)) - min(coalesce(n, 0)) AS spread
            FROM team_members tm JOIN teams t ON t.id = tm.team_id AND t.assignment = 'balanced'
            LEFT JOIN (SELECT assigned_agent_id, count(*)::int AS n FROM conversations WHERE workspace_id = ${workspaceId} AND status = 'OPEN' GROUP BY 1) o
              ON o.assigned_agent_id = tm.user_id
            WHERE tm.workspace_id = ${workspaceId} GROUP BY tm.team_id`
          const [{ twice }] = await sql<{ twice: number }[]>`
            SELECT count(*)::int AS twice FROM (SELECT conversation_id FROM assignment_history WHERE workspace_id = ${workspaceId} AND reason = 'AUTO' GROUP BY 1 HAVING count(*) > 1) x`
          const pct = (p: number) => (lat.length ? Number(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].ms) : undefined)
          outcome = {
            routed: ROUTED,
            assigned: lat.length,
            createFailures: failed,
            createRps: ROUTED / elapsed,
            capacityViolations: over,
            assignedTwice: twice,
            balancedSpreadMax: Math.max(...spreads.map((s) => Number(s.spread))),
          }
          step(`routing: ${JSON.stringify(outcome)}`)
          return {
            id: 'routing',
            label: `creation-to-assignment (${lat.length}/${ROUTED} assigned)`,
            kind: 'write' as const,
            status: lat.length === ROUTED ? ('ok' as const) : ('error' as const),
            note: `capacity violations ${over}, assigned twice ${twice}, balanced spread max ${outcome.balancedSpreadMax}, ${failed} create failures`,
            rps: ROUTED / elapsed,
            p50: pct(0.5),
            p90: pct(0.9),
            p99: pct(0.99),
            max: pct(1),
            requests: ROUTED,
          }
        },
      })
    }

    return {
      scenarios,
      summary: [],
      targets: (results) => [
        target('routing creation-to-assignment p99', resultOf(results, 'routing')?.p99, '<', 500, ' ms'),
        target('routing capacity violations', outcome.capacityViolations as number | undefined, '<=', 0),
        target('routing balanced spread (most - fewest open)', outcome.balancedSpreadMax as number | undefined, '<=', 1),
        target('list-team p99', resultOf(results, 'list-team')?.p99, '<', 100, ' ms'),
      ],
      report: async () => ({ data: { routing: outcome } }),
    }
  },
}
