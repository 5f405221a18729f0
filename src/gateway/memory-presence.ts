import {
  ONLINE_VISITORS_MAX,
  PAGE_VISIT_INTERVAL_MS,
  PAGE_VISITS_KEPT,
  PAGE_VISITS_TTL_S,
  type PageVisit,
  type PresenceReader,
  type VisitorPresence,
} from '../presence.js'
import type { PresenceStatus } from '../db/schema.js'
import { memberKey, splitMemberKey, type PresenceChange, type PresenceWriter, type VisitorChange } from './presence.js'

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
 * Visitors, as the visitors' and page scripts keep them (layout in src/presence.ts): per guest its
 * workspace and live socket entries; per workspace the online set (guestId -> time of the latest
 * connection); per guest the last page visits with their expiry and the time the page gate opens.
 */
export interface MemoryVisitorState {
  guests: Map<string, { workspaceId: string; sockets: Map<string, number> }>
  online: Map<string, Map<string, number>>
  pages: Map<string, { visits: PageVisit[]; expiresAt: number }>
  gates: Map<string, number>
}

const newVisitorState = (): MemoryVisitorState => ({ guests: new Map(), online: new Map(), pages: new Map(), gates: new Map() })

/** Redis's order of a sorted set read backwards: score, then member, both descending. */
const byScoreDesc = (a: [string, number], b: [string, number]) => b[1] - a[1] || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0)

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
  readonly visitorState: MemoryVisitorState

  constructor(opts: { gatewayId: string; entryTtlMs: number; now?: () => number; state?: MemoryPresenceState; visitorState?: MemoryVisitorState }) {
    this.gatewayId = opts.gatewayId
    this.entryTtlMs = opts.entryTtlMs
    this.now = opts.now ?? Date.now
    this.state = opts.state ?? new Map()
    this.visitorState = opts.visitorState ?? newVisitorState()
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

  async anyMemberOnline(workspaceId: string) {
    // The status last announced, as the Redis reader reads its state hash. A scan of this
    // process's members: single-process mode holds one deployment's few.
    const prefix = `${workspaceId}:`
    for (const [key, m] of this.state) if (key.startsWith(prefix) && m.announced === 'online') return true
    return false
  }

  // Visitors: the visitors' script, step by step.

  private applyVisitor(workspaceId: string, guestId: string, op: 'connect' | 'add' | 'remove' | 'sweep', socketIds: string[], now: number): VisitorChange | null {
    const { guests, online } = this.visitorState
    const set = online.get(workspaceId) ?? new Map<string, number>()
    const was = set.has(guestId)
    const g = guests.get(guestId) ?? { workspaceId, sockets: new Map<string, number>() }
    if (op === 'connect' || op === 'add') for (const s of socketIds) g.sockets.set(`${this.gatewayId}:${s}`, now + this.entryTtlMs)
    else if (op === 'remove') for (const s of socketIds) g.sockets.delete(`${this.gatewayId}:${s}`)
    for (const [entry, expiry] of g.sockets) if (expiry < now) g.sockets.delete(entry)
    if (g.sockets.size === 0) {
      guests.delete(guestId)
      if (!was) return null
      set.delete(guestId)
      if (set.size === 0) online.delete(workspaceId)
      return { workspaceId, guestId, status: 'offline' }
    }
    guests.set(guestId, g)
    if (op === 'connect' || !was) {
      set.set(guestId, now)
      online.set(workspaceId, set)
    }
    return was ? null : { workspaceId, guestId, status: 'online' }
  }

  async addVisitor(workspaceId: string, guestId: string, socketId: string) {
    return this.applyVisitor(workspaceId, guestId, 'connect', [socketId], this.now())
  }

  async removeVisitor(workspaceId: string, guestId: string, socketId: string) {
    return this.applyVisitor(workspaceId, guestId, 'remove', [socketId], this.now())
  }

  async touchVisitors(visitors: Map<string, Set<string>>) {
    const now = this.now()
    const changes: VisitorChange[] = []
    for (const [key, socketIds] of visitors) {
      if (socketIds.size === 0) continue
      const { workspaceId, userId } = splitMemberKey(key)
      const c = this.applyVisitor(workspaceId, userId, 'add', [...socketIds], now)
      if (c) changes.push(c)
    }
    return changes
  }

  async sweepVisitors() {
    const now = this.now()
    const changes: VisitorChange[] = []
    for (const [guestId, g] of [...this.visitorState.guests]) {
      if ([...g.sockets.values()].some((expiry) => expiry >= now)) continue
      const c = this.applyVisitor(g.workspaceId, guestId, 'sweep', [], now)
      if (c) changes.push(c)
    }
    // What Redis expires by itself: page lists a week after the latest visit, opened gates.
    for (const [guestId, p] of this.visitorState.pages) if (p.expiresAt <= now) this.visitorState.pages.delete(guestId)
    for (const [guestId, opens] of this.visitorState.gates) if (opens <= now) this.visitorState.gates.delete(guestId)
    return changes
  }

  async recordPageVisit(guestId: string, visit: Omit<PageVisit, 'at'>) {
    const now = this.now()
    const { gates, pages } = this.visitorState
    const opens = gates.get(guestId)
    if (opens !== undefined && opens > now) return null
    gates.set(guestId, now + PAGE_VISIT_INTERVAL_MS)
    const entry: PageVisit = { url: visit.url, title: visit.title, at: new Date(now).toISOString() }
    const kept = this.livePages(guestId, now)
    pages.set(guestId, { visits: [entry, ...kept].slice(0, PAGE_VISITS_KEPT), expiresAt: now + PAGE_VISITS_TTL_S * 1000 })
    return entry
  }

  private livePages(guestId: string, now: number): PageVisit[] {
    const p = this.visitorState.pages.get(guestId)
    if (!p) return []
    if (p.expiresAt <= now) {
      this.visitorState.pages.delete(guestId)
      return []
    }
    return p.visits
  }

  private visitorLive(guestId: string, now: number) {
    const g = this.visitorState.guests.get(guestId)
    return g !== undefined && [...g.sockets.values()].some((expiry) => expiry >= now)
  }

  async visitors(guestIds: string[]) {
    const now = this.now()
    const out = new Map<string, VisitorPresence>()
    for (const id of guestIds) {
      const online = this.visitorLive(id, now)
      const page = online ? this.livePages(id, now)[0] : undefined
      out.set(id, { online, currentPage: page ? { ...page } : null })
    }
    return out
  }

  async onlineVisitors(workspaceId: string, limit = ONLINE_VISITORS_MAX) {
    const now = this.now()
    // As the Redis reader: the top of the online set (a few extra), less those whose sockets all expired.
    const top = [...(this.visitorState.online.get(workspaceId) ?? [])].sort(byScoreDesc).slice(0, limit + 50)
    return top.map(([id]) => id).filter((id) => this.visitorLive(id, now)).slice(0, limit)
  }

  async onlineVisitorSet(workspaceId: string) {
    return [...(this.visitorState.online.get(workspaceId) ?? [])].sort((a, b) => byScoreDesc(b, a)).map(([id]) => id)
  }

  async pageVisits(guestId: string) {
    return this.livePages(guestId, this.now()).map((v) => ({ ...v }))
  }
}
