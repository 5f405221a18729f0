import type { Redis } from 'ioredis'

/**
 * Members' presence, kept in Redis by the gateway (src/gateway) and read by the API
 * (available-agents). Layout, per workspace and member:
 * - `${prefix}presence:${workspaceId}:${userId}`: a sorted set of live sockets
 *   (`${gatewayId}:${socketId}`), each scored by the time (ms) it expires unless its gateway
 *   refreshes it. A member is connected while any score is in the future, so a gateway that dies
 *   takes its sockets with it within the TTL.
 * - `${prefix}presence-away:${workspaceId}`: a hash userId -> '1' for members who chose "away".
 * - `${prefix}presence-state:${workspaceId}`: a hash userId -> the status last announced
 *   (`user:presence`); absent means offline. Changed only inside the gateway's Lua script, so a
 *   transition is announced once however many gateways see it.
 * - `${prefix}presence-index`: a sorted set of `${workspaceId}:${userId}` scored by the latest
 *   expiry among that member's sockets; gateways sweep the entries in the past to announce the
 *   members whose gateway died.
 */
export const presenceStatuses = ['online', 'away', 'offline'] as const
export type PresenceStatus = (typeof presenceStatuses)[number]

export const presenceKeys = {
  sockets: (prefix: string, workspaceId: string, userId: string) => `${prefix}presence:${workspaceId}:${userId}`,
  away: (prefix: string, workspaceId: string) => `${prefix}presence-away:${workspaceId}`,
  state: (prefix: string, workspaceId: string) => `${prefix}presence-state:${workspaceId}`,
  index: (prefix: string) => `${prefix}presence-index`,
}

/**
 * What the API asks about presence (available agents). Redis (redisPresenceReader) or, in
 * single-process mode, the gateway's own in-process store (src/gateway/memory-presence.ts),
 * chosen at start by src/mode.ts.
 */
export interface PresenceReader {
  read(workspaceId: string, userIds: string[]): Promise<Record<string, PresenceStatus>>
}

export function redisPresenceReader(redis: Redis, prefix: string): PresenceReader {
  return { read: (workspaceId, userIds) => readPresence(redis, prefix, workspaceId, userIds) }
}

/** Presence of each of `userIds` (offline for anyone unknown). One round trip. */
export async function readPresence(
  redis: Redis,
  prefix: string,
  workspaceId: string,
  userIds: string[],
  now = Date.now(),
): Promise<Record<string, PresenceStatus>> {
  const out: Record<string, PresenceStatus> = {}
  if (userIds.length === 0) return out
  const pipeline = redis.pipeline()
  for (const userId of userIds) pipeline.zcount(presenceKeys.sockets(prefix, workspaceId, userId), now, '+inf')
  pipeline.hmget(presenceKeys.away(prefix, workspaceId), ...userIds)
  const results = await pipeline.exec()
  if (!results) return Object.fromEntries(userIds.map((u) => [u, 'offline']))
  const away = (results[userIds.length]?.[1] ?? []) as (string | null)[]
  userIds.forEach((userId, i) => {
    const live = Number(results[i]?.[1] ?? 0) > 0
    out[userId] = !live ? 'offline' : away[i] ? 'away' : 'online'
  })
  return out
}
