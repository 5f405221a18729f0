import type { Redis } from 'ioredis'
import { presenceKeys, type PresenceStatus } from '../presence.js'

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
  }
}

export interface PresenceChange {
  workspaceId: string
  userId: string
  status: PresenceStatus
  at: string
}

export interface PresenceStoreOptions {
  redis: Redis
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
  private readonly redis: Redis
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
}
