import { randomUUID } from 'node:crypto'
import type { App } from '../../src/app.js'
import { PresenceStore } from '../../src/gateway/presence.js'
import { redisOf, type SeededMember, type SeededWorkspace } from '../helper.js'

export async function createTeam(app: App, as: SeededMember, body: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/teams', headers: as.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`team create failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

export async function addToTeam(app: App, as: SeededMember, teamId: string, userId: string, capacity?: number | null) {
  const res = await app.inject({ method: 'PUT', url: `/teams/${teamId}/members/${encodeURIComponent(userId)}`, headers: as.headers, payload: capacity === undefined ? {} : { capacity } })
  if (res.statusCode !== 200) throw new Error(`team member failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

export async function setDefaultTeam(app: App, ws: SeededWorkspace, teamId: string | null) {
  const res = await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { defaultTeamId: teamId } })
  if (res.statusCode !== 200) throw new Error(`channel patch failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

/**
 * Members' presence as a gateway writes it (the gateway's own store on the test's Redis prefix):
 * `online` adds a live socket entry, `offline` removes it.
 */
export function presenceOf(app: App, redisPrefix: string) {
  const store = new PresenceStore({ redis: redisOf(app), prefix: redisPrefix, gatewayId: randomUUID(), entryTtlMs: 60_000 })
  const sockets = new Map<string, string>()
  return {
    async online(workspaceId: string, userId: string) {
      const socketId = randomUUID()
      sockets.set(userId, socketId)
      await store.add(workspaceId, userId, socketId)
    },
    async offline(workspaceId: string, userId: string) {
      const socketId = sockets.get(userId)
      if (socketId) await store.remove(workspaceId, userId, socketId)
    },
  }
}

export async function openCounts(app: App, workspaceId: string): Promise<Record<string, number>> {
  const rows = await app.deps.sql<{ agent: string; n: number }[]>`
    SELECT assigned_agent_id AS agent, count(*)::int AS n FROM conversations
    WHERE workspace_id = ${workspaceId} AND status = 'OPEN' AND deleted_at IS NULL AND assigned_agent_id IS NOT NULL GROUP BY 1`
  return Object.fromEntries(rows.map((r) => [r.agent, r.n]))
}

export async function until(check: () => Promise<boolean>, ms = 5000) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 25))
  }
}
