import type { PresenceStatus } from './db/schema.js'
import type { RedisClient } from './redis.js'

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
export const presenceKeys = {
  sockets: (prefix: string, workspaceId: string, userId: string) => `${prefix}presence:${workspaceId}:${userId}`,
  away: (prefix: string, workspaceId: string) => `${prefix}presence-away:${workspaceId}`,
  state: (prefix: string, workspaceId: string) => `${prefix}presence-state:${workspaceId}`,
  index: (prefix: string) => `${prefix}presence-index`,
}

/**
 * What the API asks about presence: members (available agents, the widget's `online`) and
 * visitors (online, current page, page visits). Redis (redisPresenceReader) or, in single-process
 * mode, the gateway's own in-process store (src/gateway/memory-presence.ts), chosen at start by
 * src/mode.ts. The Redis reader rejects while Redis is down; callers decide what that means.
 */
export interface PresenceReader {
  read(workspaceId: string, userIds: string[]): Promise<Record<string, PresenceStatus>>
  /** True when some member of the workspace was last announced `online` (`away` does not count). */
  anyMemberOnline(workspaceId: string): Promise<boolean>
  /** Online state and current page of each of `guestIds`. */
  visitors(guestIds: string[]): Promise<Map<string, VisitorPresence>>
  /** The workspace's online visitors, most recently connected first, at most `limit`. */
  onlineVisitors(workspaceId: string, limit?: number): Promise<string[]>
  /** Every visitor id in the workspace's online set (the /visitors `online` filter). */
  onlineVisitorSet(workspaceId: string): Promise<string[]>
  /** The guest's last page visits, newest first. */
  pageVisits(guestId: string): Promise<PageVisit[]>
}

export function redisPresenceReader(redis: RedisClient, prefix: string): PresenceReader {
  return {
    read: (workspaceId, userIds) => readPresence(redis, prefix, workspaceId, userIds),
    anyMemberOnline: (workspaceId) => anyMemberOnline(redis, prefix, workspaceId),
    visitors: (guestIds) => readVisitorPresence(redis, prefix, guestIds),
    onlineVisitors: (workspaceId, limit) => readOnlineVisitors(redis, prefix, workspaceId, limit),
    onlineVisitorSet: (workspaceId) => readOnlineVisitorSet(redis, prefix, workspaceId),
    pageVisits: (guestId) => readPageVisits(redis, prefix, guestId),
  }
}

/** Presence of each of `userIds` (offline for anyone unknown). One round trip. */
export async function readPresence(
  redis: RedisClient,
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

/**
 * Visitors' presence and page visits, kept by the gateway with the same mechanism as members'
 * (write side: src/gateway/presence.ts), read by the API (/visitors, the widget configuration).
 * Layout:
 * - `${prefix}vpresence:${guestId}`: a sorted set of the guest's live sockets scored by expiry,
 *   like a member's (a dead gateway's sockets expire within the TTL).
 * - `${prefix}vonline:${workspaceId}`: a sorted set guestId -> the time (ms) of the guest's latest
 *   connection: the workspace's online visitors, most recently connected last. Changed only by the
 *   gateway's Lua script, so "came online" and "went offline" are each announced once. GET
 *   /visitors/online reads the top of it: no scan of every key.
 * - `${prefix}vpresence-index`: `${workspaceId}:${guestId}` scored by the latest expiry among the
 *   guest's sockets; gateways sweep the entries in the past.
 * - `${prefix}vpages:${guestId}`: a list of the last PAGE_VISITS_KEPT page visits (JSON, newest
 *   first), expiring PAGE_VISITS_TTL_S after the latest; `${prefix}vpage-gate:${guestId}` holds the
 *   one-a-second throttle shared by every gateway.
 */
export const visitorPresenceKeys = {
  sockets: (prefix: string, guestId: string) => `${prefix}vpresence:${guestId}`,
  online: (prefix: string, workspaceId: string) => `${prefix}vonline:${workspaceId}`,
  index: (prefix: string) => `${prefix}vpresence-index`,
  pages: (prefix: string, guestId: string) => `${prefix}vpages:${guestId}`,
  pageGate: (prefix: string, guestId: string) => `${prefix}vpage-gate:${guestId}`,
}

export const PAGE_VISITS_KEPT = 20
/** A week: the agent still sees what a returning visitor read last time. */
export const PAGE_VISITS_TTL_S = 7 * 24 * 3600
/** At most one page visit a second per visitor (API.md section 13). */
export const PAGE_VISIT_INTERVAL_MS = 1000
/** GET /visitors/online answers at most this many. */
export const ONLINE_VISITORS_MAX = 500

export interface PageVisit {
  url: string
  title: string
  at: string
}

export interface VisitorPresence {
  online: boolean
  /** The latest page visit while online; null when offline or when the widget sent none. */
  currentPage: PageVisit | null
}

export function parseVisit(raw: string | null | undefined): PageVisit | null {
  if (!raw) return null
  try {
    const v = JSON.parse(raw) as PageVisit
    return typeof v.url === 'string' && typeof v.title === 'string' && typeof v.at === 'string' ? { url: v.url, title: v.title, at: v.at } : null
  } catch {
    return null
  }
}

/** Online state and current page of each of `guestIds`. One round trip. */
export async function readVisitorPresence(redis: RedisClient, prefix: string, guestIds: string[], now = Date.now()): Promise<Map<string, VisitorPresence>> {
  const out = new Map<string, VisitorPresence>()
  if (guestIds.length === 0) return out
  const pipeline = redis.pipeline()
  for (const id of guestIds) {
    pipeline.zcount(visitorPresenceKeys.sockets(prefix, id), now, '+inf')
    pipeline.lindex(visitorPresenceKeys.pages(prefix, id), 0)
  }
  const results = (await pipeline.exec()) ?? []
  guestIds.forEach((id, i) => {
    const online = Number(results[2 * i]?.[1] ?? 0) > 0
    out.set(id, { online, currentPage: online ? parseVisit(results[2 * i + 1]?.[1] as string | null) : null })
  })
  return out
}

/**
 * The workspace's online visitors, most recently connected first, at most `limit`: the top of
 * the workspace's online set, less any whose sockets all expired (a dead gateway's, until the
 * sweep removes them). Two round trips whatever the number of visitors stored.
 */
export async function readOnlineVisitors(redis: RedisClient, prefix: string, workspaceId: string, limit = ONLINE_VISITORS_MAX, now = Date.now()): Promise<string[]> {
  // A few extra cover entries a sweep has not removed yet.
  const ids = await redis.zrevrange(visitorPresenceKeys.online(prefix, workspaceId), 0, limit + 49)
  if (ids.length === 0) return []
  const pipeline = redis.pipeline()
  for (const id of ids) pipeline.zcount(visitorPresenceKeys.sockets(prefix, id), now, '+inf')
  const results = (await pipeline.exec()) ?? []
  return ids.filter((_, i) => Number(results[i]?.[1] ?? 0) > 0).slice(0, limit)
}

/** Every online visitor id of the workspace (the /visitors `online` filter): one round trip. */
export async function readOnlineVisitorSet(redis: RedisClient, prefix: string, workspaceId: string): Promise<string[]> {
  return redis.zrange(visitorPresenceKeys.online(prefix, workspaceId), '0', '-1')
}

/** The guest's last page visits, newest first. */
export async function readPageVisits(redis: RedisClient, prefix: string, guestId: string): Promise<PageVisit[]> {
  const raw = await redis.lrange(visitorPresenceKeys.pages(prefix, guestId), 0, PAGE_VISITS_KEPT - 1)
  return raw.map(parseVisit).filter((v): v is PageVisit => v !== null)
}

/**
 * True when some member of the workspace is `online` now (`away` does not count): the statuses
 * the gateway last announced, one small hash per workspace. A member whose gateway died counts
 * until the sweep announces them offline, within the presence TTL.
 */
export async function anyMemberOnline(redis: RedisClient, prefix: string, workspaceId: string): Promise<boolean> {
  const statuses = await redis.hvals(presenceKeys.state(prefix, workspaceId))
  return statuses.includes('online')
}
