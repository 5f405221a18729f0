import type { PresenceReader, PresenceStatus } from '../presence.js'
import { memberKey, splitMemberKey, type PresenceChange, type PresenceWriter } from './presence.js'

/** One member's presence: live socket entries with their expiry (ms), the away flag, the status last announced. */
interface Member {
  sockets: Map<string, number>
  away: boolean
  announced: PresenceStatus
}

/** The state several in-process "gateways" share (one in single-process mode; tests use several). */
export type MemoryPresenceState = Map<string, Member>

type Op = 'add' | 'remove' | 'away' | 'online' | 'touch' | 'sweep'

/**
 * Presence in this process's memory for single-process mode (REDIS_URL unset or `memory:`), with
 * the rules of the Redis script in src/gateway/presence.ts, step by step: apply the change, drop
 * expired entries, derive the status, announce only a change. It is both the gateway's writer and
 * the API's reader (the same object, src/mode.ts). Everything resets when the process restarts,
 * as the sockets themselves do.
 */
export class MemoryPresenceStore implements PresenceWriter, PresenceReader {
  private readonly gatewayId: string
  private readonly entryTtlMs: number
  private readonly now: () => number
  readonly state: MemoryPresenceState

  constructor(opts: { gatewayId: string; entryTtlMs: number; now?: () => number; state?: MemoryPresenceState }) {
    this.gatewayId = opts.gatewayId
    this.entryTtlMs = opts.entryTtlMs
    this.now = opts.now ?? Date.now
    this.state = opts.state ?? new Map()
  }

  private apply(workspaceId: string, userId: string, op: Op, socketIds: string[], now: number): PresenceChange | null {
    const key = memberKey(workspaceId, userId)
    const m = this.state.get(key) ?? { sockets: new Map(), away: false, announced: 'offline' as PresenceStatus }
    const live = () => [...m.sockets.values()].some((expiry) => expiry >= now)
    if (op === 'add') for (const s of socketIds) m.sockets.set(`${this.gatewayId}:${s}`, now + this.entryTtlMs)
    else if (op === 'remove') for (const s of socketIds) m.sockets.delete(`${this.gatewayId}:${s}`)
    else if (op === 'away' && live()) m.away = true
    else if (op === 'online') m.away = false
    for (const [entry, expiry] of m.sockets) if (expiry < now) m.sockets.delete(entry)
    const status: PresenceStatus = m.sockets.size === 0 ? 'offline' : m.away ? 'away' : 'online'
    if (status === 'offline') m.away = false
    const previous = m.announced
    m.announced = status
    // Nothing left to remember about an offline member (the script deletes its keys too).
    if (status === 'offline') this.state.delete(key)
    else this.state.set(key, m)
    return previous === status ? null : { workspaceId, userId, status, at: new Date(now).toISOString() }
  }

  async add(workspaceId: string, userId: string, socketId: string) {
    return this.apply(workspaceId, userId, 'add', [socketId], this.now())
  }

  async remove(workspaceId: string, userId: string, socketId: string) {
    return this.apply(workspaceId, userId, 'remove', [socketId], this.now())
  }

  async setStatus(workspaceId: string, userId: string, status: 'online' | 'away') {
    return this.apply(workspaceId, userId, status, [], this.now())
  }

  async touch(members: Map<string, Set<string>>) {
    const now = this.now()
    const changes: PresenceChange[] = []
    for (const [key, socketIds] of members) {
      if (socketIds.size === 0) continue
      const { workspaceId, userId } = splitMemberKey(key)
      const c = this.apply(workspaceId, userId, 'add', [...socketIds], now)
      if (c) changes.push(c)
    }
    return changes
  }

  async sweep() {
    const now = this.now()
    const changes: PresenceChange[] = []
    for (const [key, m] of [...this.state]) {
      if ([...m.sockets.values()].some((expiry) => expiry >= now)) continue
      const { workspaceId, userId } = splitMemberKey(key)
      const c = this.apply(workspaceId, userId, 'sweep', [], now)
      if (c) changes.push(c)
    }
    return changes
  }

  async read(workspaceId: string, userIds: string[]) {
    const now = this.now()
    const out: Record<string, PresenceStatus> = {}
    for (const userId of userIds) {
      const m = this.state.get(memberKey(workspaceId, userId))
      const live = m !== undefined && [...m.sockets.values()].some((expiry) => expiry >= now)
      out[userId] = !live ? 'offline' : m.away ? 'away' : 'online'
    }
    return out
  }
}
