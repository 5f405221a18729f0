import type { Socket } from 'socket.io'
import { ackInvalidPresence, ackPresenceUnavailable, ackRateLimited } from '../errors.js'
import { rooms } from '../events.js'
import { touchLastSeen } from '../visitors/visitors.js'
import { principalOf, type SocketPrincipal } from './auth.js'
import { presenceFailed, type Parts } from './parts.js'
import type { VisitorChange } from './presence.js'

const PRESENCE_STATUSES = new Set(['online', 'away'])
/** presence:set calls a socket may make per window: every change is broadcast to the workspace. */
const PRESENCE_SET_LIMIT = { max: 20, windowMs: 10_000 }

/** A connected socket joins its rooms; a member's socket may set its presence, and leaves it on disconnect. */
export function onConnection(parts: Parts, socket: Socket) {
  const { log, presence, announce, closing } = parts
  const who = principalOf(socket)
  if (who.kind === 'visitor') {
    socket.join(rooms.guest(who.guestId))
    log.debug({ socketId: socket.id, guestId: who.guestId }, 'visitor connected')
    onVisitorConnection(parts, socket, who)
    return
  }
  const { workspaceId, userId } = who
  // A room per member as well: events for one member (mention:new) are routed by the adapter,
  // never broadcast to the workspace and filtered on the client.
  socket.join([rooms.workspace(workspaceId), rooms.member(workspaceId, userId)])
  log.debug({ socketId: socket.id, workspaceId, userId }, 'member connected')

  const allow = socketWindow(PRESENCE_SET_LIMIT)
  socket.on('presence:set', (payload: unknown, ack?: unknown) => {
    const reply = typeof ack === 'function' ? (ack as (r: unknown) => void) : () => {}
    if (!allow()) {
      reply(ackRateLimited('presence:set'))
      return
    }
    const status = (payload as { status?: unknown } | null)?.status
    const valid =
      payload !== null &&
      typeof payload === 'object' &&
      !Array.isArray(payload) &&
      typeof status === 'string' &&
      PRESENCE_STATUSES.has(status) &&
      Object.keys(payload).length === 1
    if (!valid) {
      reply(ackInvalidPresence())
      return
    }
    presence.setStatus(workspaceId, userId, status as 'online' | 'away').then(
      (change) => {
        announce(change)
        reply({ ok: true, status })
      },
      (err: Error) => {
        presenceFailed(log, err)
        reply(ackPresenceUnavailable())
      },
    )
  })

  socket.on('disconnect', () => {
    // On shutdown the entries are left to expire: clients reconnect to another gateway within
    // the TTL, so a rolling restart does not flash everyone offline.
    if (closing.value) return
    presence.remove(workspaceId, userId, socket.id).then(announce, (err: Error) => presenceFailed(log, err))
  })
}

/**
 * A visitor's transition found by the heartbeat (online again after a presence failure, offline
 * after its gateway died and the TTL passed): announced like any update, at most one a second.
 */
export const announceVisitorChange = (parts: Parts) => (change: VisitorChange | null) => {
  if (change) parts.visitors.update(change.workspaceId, change.guestId)
}

/** page:visit calls a socket may send to Redis per window (the shared one-a-second gate drops the rest). */
const PAGE_VISIT_LIMIT = { max: 10, windowMs: 10_000 }
const PAGE_VISIT_KEYS = new Set(['url', 'title'])

/**
 * A `page:visit` payload as the contract allows it, or null (dropped). Only the origin and path
 * are kept (API.md section 13): a query string or fragment carries reset tokens, OAuth fragments
 * and the like, and credentials in the URL (`user:pass@`) are not part of the origin.
 */
export function pageVisitOf(payload: unknown): { url: string; title: string } | null {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return null
  const p = payload as Record<string, unknown>
  if (!Object.keys(p).every((k) => PAGE_VISIT_KEYS.has(k))) return null
  const { url, title = '' } = p
  if (typeof url !== 'string' || url.length > 2000 || typeof title !== 'string' || title.length > 200) return null
  if (url.includes('\u0000') || title.includes('\u0000')) return null
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return null
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null
  return { url: `${parsed.origin}${parsed.pathname}`, title }
}

/**
 * A visitor's socket: it counts as online (lastSeenAt moves), sends page visits, and goes offline
 * with its last socket; each transition and recorded page reaches the workspace as visitor:updated,
 * debounced (src/gateway/visitor-announcer.ts): a socket that closes and comes back within the
 * offline delay announces nothing.
 */
function onVisitorConnection(parts: Parts, socket: Socket, who: Extract<SocketPrincipal, { kind: 'visitor' }>) {
  const { log, presence, closing, sql } = parts
  const { workspaceId, guestId } = who
  const touch = () => touchLastSeen(sql, guestId).catch((err: Error) => log.warn({ err: { message: err.message } }, 'lastSeenAt not updated'))
  presence.addVisitor(workspaceId, guestId, socket.id).then(
    async (change) => {
      // Back within the offline delay: members never heard it leave, so nothing is announced,
      // and lastSeenAt (moved at the connection before) is left alone.
      if (parts.visitors.reconnected(guestId)) return
      await touch()
      if (change) parts.visitors.update(workspaceId, guestId)
    },
    async (err: Error) => {
      presenceFailed(log, err) // the next heartbeat records it
      await touch()
    },
  )

  const allow = socketWindow(PAGE_VISIT_LIMIT)
  socket.on('page:visit', (payload: unknown, ack?: unknown) => {
    const reply = typeof ack === 'function' ? (ack as (r: unknown) => void) : () => {}
    const visit = pageVisitOf(payload)
    if (!visit || !allow()) return reply({ ok: false, recorded: false })
    presence.recordPageVisit(guestId, visit).then(
      (recorded) => {
        if (recorded) parts.visitors.update(workspaceId, guestId)
        reply({ ok: true, recorded: recorded !== null })
      },
      (err: Error) => {
        presenceFailed(log, err)
        reply({ ok: false, recorded: false })
      },
    )
  })

  socket.on('disconnect', () => {
    if (closing.value) return
    presence.removeVisitor(workspaceId, guestId, socket.id).then(
      (change) => {
        if (change?.status === 'offline') parts.visitors.offline(workspaceId, guestId)
      },
      (err: Error) => presenceFailed(log, err),
    )
  })
}

/** A fixed-window counter for one socket's events: true while the window has room. */
function socketWindow(limit: { max: number; windowMs: number }) {
  let window = { start: Date.now(), count: 0 }
  return () => {
    const now = Date.now()
    if (now - window.start >= limit.windowMs) window = { start: now, count: 0 }
    return ++window.count <= limit.max
  }
}
