import type { RedisClient } from '../redis.js'
import {
  PAGE_VISIT_INTERVAL_MS,
  PAGE_VISITS_KEPT,
  PAGE_VISITS_TTL_S,
  presenceKeys,
  visitorPresenceKeys,
  type PageVisit,
} from '../presence.js'
import type { PresenceStatus } from '../db/schema.js'

/**
 * What a gateway does to presence: one interface, two implementations chosen at start
 * (src/mode.ts): PresenceStore below (Redis, shared by every gateway) and MemoryPresenceStore
 * (src/gateway/memory-presence.ts, single-process mode). Same rules, same answers.
 */
export interface PresenceWriter {
  add(workspaceId: string, userId: string, socketId: string): Promise<PresenceChange | null>
  remove(workspaceId: string, userId: string, socketId: string): Promise<PresenceChange | null>
  setStatus(workspaceId: string, userId: string, status: 'online' | 'away'): Promise<PresenceChange | null>
  touch(members: Map<string, Set<string>>): Promise<PresenceChange[]>
  sweep(batch?: number): Promise<PresenceChange[]>
  /** A visitor's socket connected: it also moves the guest to the top of the workspace's online visitors. */
  addVisitor(workspaceId: string, guestId: string, socketId: string): Promise<VisitorChange | null>
  removeVisitor(workspaceId: string, guestId: string, socketId: string): Promise<VisitorChange | null>
  /** The heartbeat for visitor sockets: `visitors` maps `${workspaceId}:${guestId}` -> socket ids. */
  touchVisitors(visitors: Map<string, Set<string>>): Promise<VisitorChange[]>
  sweepVisitors(batch?: number): Promise<VisitorChange[]>
  /** Keeps the last PAGE_VISITS_KEPT visits for PAGE_VISITS_TTL_S; null when within PAGE_VISIT_INTERVAL_MS of the last one. */
  recordPageVisit(guestId: string, visit: Omit<PageVisit, 'at'>): Promise<PageVisit | null>
}

/**
 * The write side of presence (layout in src/presence.ts). Every change goes through one Lua
 * script that applies the change, drops expired sockets, derives the member's status and
 * compares it with the status last announced. Redis runs scripts one at a time, so when two
 * gateways race (two tabs closing at once, several gateways sweeping the same dead one) exactly
 * one of them gets the transition back and announces it.
 */
const SCRIPT = `
local sockets, away, state, index = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, user, member, op, expiry = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if op == 'add' then
  for i = 6, #ARGV do redis.call('ZADD', sockets, expiry, ARGV[i]) end
elseif op == 'remove' then
  for i = 6, #ARGV do redis.call('ZREM', sockets, ARGV[i]) end
elseif op == 'away' then
  if redis.call('ZCOUNT', sockets, now, '+inf') > 0 then redis.call('HSET', away, user, '1') end
elseif op == 'online' then
  redis.call('HDEL', away, user)
end
-- A socket is live while its score is >= now (what readPresence counts).
redis.call('ZREMRANGEBYSCORE', sockets, '-inf', '(' .. now)
local status
if redis.call('ZCARD', sockets) == 0 then
  status = 'offline'
  redis.call('HDEL', away, user)
  redis.call('ZREM', index, member)
else
  if redis.call('HEXISTS', away, user) == 1 then status = 'away' else status = 'online' end
  local last = redis.call('ZRANGE', sockets, -1, -1, 'WITHSCORES')
  redis.call('ZADD', index, last[2], member)
end
local previous = redis.call('HGET', state, user)
if not previous then previous = 'offline' end
if previous == status then return false end
if status == 'offline' then redis.call('HDEL', state, user) else redis.call('HSET', state, user, status) end
return status
`

/**
 * The visitors' script (layout in src/presence.ts): the same socket set and sweep index as a
 * member's; being in the workspace's online set is the "announced online" state. 'connect' also
 * moves the guest to the top of the online set (most recently connected first); 'add' (the
 * heartbeat's refresh) does not.
 */
const VISITOR_SCRIPT = `
local sockets, online, index = KEYS[1], KEYS[2], KEYS[3]
local now, guest, member, op, expiry = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local was = redis.call('ZSCORE', online, guest)
if op == 'connect' or op == 'add' then
  for i = 6, #ARGV do redis.call('ZADD', sockets, expiry, ARGV[i]) end
elseif op == 'remove' then
  for i = 6, #ARGV do redis.call('ZREM', sockets, ARGV[i]) end
end
redis.call('ZREMRANGEBYSCORE', sockets, '-inf', '(' .. now)
if redis.call('ZCARD', sockets) == 0 then
  redis.call('ZREM', index, member)
  if was then
    redis.call('ZREM', online, guest)
    return 'offline'
  end
  return false
end
local last = redis.call('ZRANGE', sockets, -1, -1, 'WITHSCORES')
redis.call('ZADD', index, last[2], member)
if op == 'connect' or not was then redis.call('ZADD', online, now, guest) end
if was then return false end
return 'online'
`

/**
 * Records a page visit unless one was recorded for the guest within the interval (every gateway
 * shares the gate). The gate holds the time it opens again, judged by the caller's clock (the
 * same clock as the visits' `at`); its key outlives that by a minute and then goes.
 */
const PAGE_SCRIPT = `
local now, interval = tonumber(ARGV[5]), tonumber(ARGV[2])
local opens = redis.call('GET', KEYS[2])
if opens and tonumber(opens) > now then return 0 end
redis.call('SET', KEYS[2], now + interval, 'PX', interval + 60000)
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[3]) - 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
`

type Op = 'add' | 'remove' | 'away' | 'online' | 'touch' | 'sweep'

declare module 'ioredis' {
  interface RedisCommander<Context> {
    parleyPresence(
      sockets: string,
      away: string,
      state: string,
      index: string,
      now: number,
      userId: string,
      indexMember: string,
      op: Op,
      expiry: number,
      ...socketMembers: string[]
    ): import('ioredis').Result<string | null, Context>
    parleyVisitorPresence(
      sockets: string,
      online: string,
      index: string,
      now: number,
      guestId: string,
      indexMember: string,
      op: 'connect' | 'add' | 'remove' | 'sweep',
      expiry: number,
      ...socketMembers: string[]
    ): import('ioredis').Result<string | null, Context>
    parleyPageVisit(pages: string, gate: string, visit: string, intervalMs: number, keep: number, ttlS: number, now: number): import('ioredis').Result<number, Context>
  }
}

/** A visitor came online or went offline (announced as visitor:updated). */
export interface VisitorChange {
  workspaceId: string
  guestId: string
  status: 'online' | 'offline'
}

export interface PresenceChange {
  workspaceId: string
  userId: string
  status: PresenceStatus
  at: string
}

export interface PresenceStoreOptions {
  redis: RedisClient
  prefix: string
  /** Unique per gateway process: a socket's entry is `${gatewayId}:${socketId}`. */
  gatewayId: string
  /** How long a socket stays live without a refresh. */
  entryTtlMs: number
  now?: () => number
}

/** `${workspaceId}:${userId}`: workspace ids are UUIDs, so the first ':' splits it. */
export const memberKey = (workspaceId: string, userId: string) => `${workspaceId}:${userId}`
export function splitMemberKey(key: string): { workspaceId: string; userId: string } {
  const i = key.indexOf(':')
  return { workspaceId: key.slice(0, i), userId: key.slice(i + 1) }
}

/** The Redis implementation: the Lua script above. */
export class PresenceStore implements PresenceWriter {
  private readonly redis: RedisClient
  private readonly prefix: string
  private readonly gatewayId: string
  private readonly entryTtlMs: number
  private readonly now: () => number

  constructor(opts: PresenceStoreOptions) {
    this.redis = opts.redis
    this.prefix = opts.prefix
    this.gatewayId = opts.gatewayId
    this.entryTtlMs = opts.entryTtlMs
    this.now = opts.now ?? Date.now
    if (typeof (this.redis as { parleyPresence?: unknown }).parleyPresence !== 'function') this.redis.defineCommand('parleyPresence', { numberOfKeys: 4, lua: SCRIPT })
    if (typeof (this.redis as { parleyVisitorPresence?: unknown }).parleyVisitorPresence !== 'function') {
      this.redis.defineCommand('parleyVisitorPresence', { numberOfKeys: 3, lua: VISITOR_SCRIPT })
      this.redis.defineCommand('parleyPageVisit', { numberOfKeys: 2, lua: PAGE_SCRIPT })
    }
  }

  private entry(socketId: string) {
    return `${this.gatewayId}:${socketId}`
  }

  private args(workspaceId: string, userId: string, op: Op, socketIds: string[], now: number) {
    const p = this.prefix
    return [
      presenceKeys.sockets(p, workspaceId, userId),
      presenceKeys.away(p, workspaceId),
      presenceKeys.state(p, workspaceId),
      presenceKeys.index(p),
      now,
      userId,
      memberKey(workspaceId, userId),
      op,
      now + this.entryTtlMs,
      ...socketIds.map((s) => this.entry(s)),
    ] as const
  }

  private change(workspaceId: string, userId: string, status: string | null, now: number): PresenceChange | null {
    if (!status) return null
    return { workspaceId, userId, status: status as PresenceStatus, at: new Date(now).toISOString() }
  }

  private async run(workspaceId: string, userId: string, op: Op, socketIds: string[] = []): Promise<PresenceChange | null> {
    const now = this.now()
    const status = await this.redis.parleyPresence(...this.args(workspaceId, userId, op, socketIds, now))
    return this.change(workspaceId, userId, status, now)
  }

  /** A member's socket connected on this gateway. */
  add(workspaceId: string, userId: string, socketId: string) {
    return this.run(workspaceId, userId, 'add', [socketId])
  }

  /** A member's socket closed on this gateway. */
  remove(workspaceId: string, userId: string, socketId: string) {
    return this.run(workspaceId, userId, 'remove', [socketId])
  }

  /** `presence:set`: away until set online again or the member's last socket goes. */
  setStatus(workspaceId: string, userId: string, status: 'online' | 'away') {
    return this.run(workspaceId, userId, status === 'away' ? 'away' : 'online')
  }

  /**
   * The heartbeat: refreshes every live socket of this gateway (re-adding any that a sweep
   * removed while this process was stalled), in one pipeline. `members` maps memberKey ->
   * socket ids. Returns the transitions it caused (normally none).
   */
  async touch(members: Map<string, Set<string>>): Promise<PresenceChange[]> {
    if (members.size === 0) return []
    const now = this.now()
    const pipeline = this.redis.pipeline()
    const order: { workspaceId: string; userId: string }[] = []
    for (const [key, socketIds] of members) {
      if (socketIds.size === 0) continue
      const { workspaceId, userId } = splitMemberKey(key)
      order.push({ workspaceId, userId })
      // 'add' refreshes existing entries and restores missing ones.
      pipeline.parleyPresence(...this.args(workspaceId, userId, 'add', [...socketIds], now))
    }
    const results = (await pipeline.exec()) ?? []
    const changes: PresenceChange[] = []
    results.forEach(([err, status], i) => {
      if (err) throw err
      const c = this.change(order[i].workspaceId, order[i].userId, status as string | null, now)
      if (c) changes.push(c)
    })
    return changes
  }

  /**
   * Finds members whose every socket expired (their gateway died or lost Redis) and marks them
   * offline. Safe to run on every gateway at once: the script announces each transition once.
   */
  async sweep(batch = 500): Promise<PresenceChange[]> {
    const changes: PresenceChange[] = []
    const index = presenceKeys.index(this.prefix)
    for (let round = 0; round < 20; round++) {
      const now = this.now()
      const due = await this.redis.zrangebyscore(index, '-inf', `(${now}`, 'LIMIT', 0, batch)
      if (due.length === 0) break
      const pipeline = this.redis.pipeline()
      const order = due.map(splitMemberKey)
      for (const { workspaceId, userId } of order) pipeline.parleyPresence(...this.args(workspaceId, userId, 'sweep', [], now))
      const results = (await pipeline.exec()) ?? []
      results.forEach(([err, status], i) => {
        if (err) throw err
        const c = this.change(order[i].workspaceId, order[i].userId, status as string | null, now)
        if (c) changes.push(c)
      })
      if (due.length < batch) break
    }
    return changes
  }

  // Visitors: the same mechanism, keyed by guest (layout in src/presence.ts).

  private visitorArgs(workspaceId: string, guestId: string, op: 'connect' | 'add' | 'remove' | 'sweep', socketIds: string[], now: number) {
    const p = this.prefix
    return [
      visitorPresenceKeys.sockets(p, guestId),
      visitorPresenceKeys.online(p, workspaceId),
      visitorPresenceKeys.index(p),
      now,
      guestId,
      memberKey(workspaceId, guestId),
      op,
      now + this.entryTtlMs,
      ...socketIds.map((s) => this.entry(s)),
    ] as const
  }

  private visitorChange(workspaceId: string, guestId: string, status: string | null): VisitorChange | null {
    return status ? { workspaceId, guestId, status: status as 'online' | 'offline' } : null
  }

  /** A visitor's socket connected on this gateway. */
  async addVisitor(workspaceId: string, guestId: string, socketId: string): Promise<VisitorChange | null> {
    const status = await this.redis.parleyVisitorPresence(...this.visitorArgs(workspaceId, guestId, 'connect', [socketId], this.now()))
    return this.visitorChange(workspaceId, guestId, status)
  }

  /** A visitor's socket closed on this gateway. */
  async removeVisitor(workspaceId: string, guestId: string, socketId: string): Promise<VisitorChange | null> {
    const status = await this.redis.parleyVisitorPresence(...this.visitorArgs(workspaceId, guestId, 'remove', [socketId], this.now()))
    return this.visitorChange(workspaceId, guestId, status)
  }

  /** The heartbeat for visitor sockets: `visitors` maps `${workspaceId}:${guestId}` -> socket ids. */
  async touchVisitors(visitors: Map<string, Set<string>>): Promise<VisitorChange[]> {
    if (visitors.size === 0) return []
    const now = this.now()
    const pipeline = this.redis.pipeline()
    const order: { workspaceId: string; userId: string }[] = []
    for (const [key, socketIds] of visitors) {
      if (socketIds.size === 0) continue
      const { workspaceId, userId } = splitMemberKey(key)
      order.push({ workspaceId, userId })
      pipeline.parleyVisitorPresence(...this.visitorArgs(workspaceId, userId, 'add', [...socketIds], now))
    }
    return this.visitorResults(await pipeline.exec(), order)
  }

  /** Marks offline the visitors whose every socket expired (their gateway died); safe on every gateway at once. */
  async sweepVisitors(batch = 500): Promise<VisitorChange[]> {
    const changes: VisitorChange[] = []
    const index = visitorPresenceKeys.index(this.prefix)
    for (let round = 0; round < 20; round++) {
      const now = this.now()
      const due = await this.redis.zrangebyscore(index, '-inf', `(${now}`, 'LIMIT', 0, batch)
      if (due.length === 0) break
      const pipeline = this.redis.pipeline()
      const order = due.map(splitMemberKey)
      for (const { workspaceId, userId } of order) pipeline.parleyVisitorPresence(...this.visitorArgs(workspaceId, userId, 'sweep', [], now))
      changes.push(...this.visitorResults(await pipeline.exec(), order))
      if (due.length < batch) break
    }
    return changes
  }

  private visitorResults(results: [Error | null, unknown][] | null, order: { workspaceId: string; userId: string }[]): VisitorChange[] {
    const changes: VisitorChange[] = []
    ;(results ?? []).forEach(([err, status], i) => {
      if (err) throw err
      const c = this.visitorChange(order[i].workspaceId, order[i].userId, status as string | null)
      if (c) changes.push(c)
    })
    return changes
  }

  /**
   * `page:visit`: keeps the last PAGE_VISITS_KEPT visits; false when the guest already sent one
   * within PAGE_VISIT_INTERVAL_MS (dropped, on whichever gateway).
   */
  async recordPageVisit(guestId: string, visit: Omit<PageVisit, 'at'>): Promise<PageVisit | null> {
    const now = this.now()
    const entry: PageVisit = { ...visit, at: new Date(now).toISOString() }
    const p = this.prefix
    const recorded = await this.redis.parleyPageVisit(
      visitorPresenceKeys.pages(p, guestId),
      visitorPresenceKeys.pageGate(p, guestId),
      JSON.stringify(entry),
      PAGE_VISIT_INTERVAL_MS,
      PAGE_VISITS_KEPT,
      PAGE_VISITS_TTL_S,
      now,
    )
    return recorded === 1 ? entry : null
  }
}
