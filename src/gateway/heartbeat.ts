import type { Server, Socket } from 'socket.io'
import type { SocketPrincipal } from './auth.js'
import { announceVisitorChange } from './connections.js'
import type { Parts } from './parts.js'
import { memberKey, splitMemberKey } from './presence.js'

/** This gateway's connected member sockets, per member (or visitor sockets, per `${workspaceId}:${guestId}`). */
function memberSockets(io: Server, kind: 'member' | 'visitor' = 'member') {
  const members = new Map<string, Socket[]>()
  for (const socket of io.of('/').sockets.values()) {
    const who = socket.data as SocketPrincipal | undefined
    if (who?.kind !== kind) continue
    const key = memberKey(who.workspaceId, who.kind === 'member' ? who.userId : who.guestId)
    const list = members.get(key)
    if (list) list.push(socket)
    else members.set(key, [socket])
  }
  return members
}

/**
 * Disconnects sockets whose credentials expired, whose membership was removed or disabled, or
 * whose visitor session was revoked by a deactivation of its channel (API.md section 5).
 */
async function recheck({ io, sql, log }: Parts, now: number) {
  const visitors = new Map<string, Socket[]>()
  for (const socket of io.of('/').sockets.values()) {
    const who = socket.data as SocketPrincipal | undefined
    if (!who) continue
    if (who.expiresAt !== undefined && who.expiresAt <= now) {
      log.info({ socketId: socket.id, kind: who.kind }, 'socket credentials expired')
      socket.disconnect(true)
    } else if (who.kind === 'visitor') {
      const list = visitors.get(who.channelId.toLowerCase())
      if (list) list.push(socket)
      else visitors.set(who.channelId.toLowerCase(), [socket])
    }
  }
  if (visitors.size > 0) {
    const rows = await sql<{ id: string; active: boolean; epoch: number }[]>`
      SELECT id::text, active, session_epoch AS epoch FROM channels WHERE id = ANY(${[...visitors.keys()]}::uuid[])`
    const state = new Map(rows.map((r) => [r.id, r]))
    for (const [channelId, sockets] of visitors) {
      const channel = state.get(channelId)
      for (const socket of sockets) {
        const who = socket.data as Extract<SocketPrincipal, { kind: 'visitor' }>
        if (channel && channel.active && who.epoch >= channel.epoch) continue
        log.info({ socketId: socket.id, channelId }, 'visitor session revoked: disconnecting')
        socket.disconnect(true)
      }
    }
  }
  const members = memberSockets(io)
  const keys = [...members.keys()]
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000).map(splitMemberKey)
    const rows = await sql<{ w: string; u: string }[]>`
      SELECT m.workspace_id::text AS w, m.user_id AS u
      FROM members m
      JOIN unnest(${batch.map((b) => b.workspaceId)}::uuid[], ${batch.map((b) => b.userId)}::text[]) AS x(w, u)
        ON m.workspace_id = x.w AND m.user_id = x.u
      WHERE m.status = 'active'`
    const active = new Set(rows.map((r) => memberKey(r.w, r.u)))
    for (const b of batch) {
      const key = memberKey(b.workspaceId, b.userId)
      if (active.has(key)) continue
      log.info({ workspaceId: b.workspaceId, userId: b.userId }, 'membership gone: disconnecting member sockets')
      for (const socket of members.get(key) ?? []) socket.disconnect(true)
    }
  }
}

/**
 * Every heartbeatMs: refresh this gateway's presence entries, sweep expired ones (any dead
 * gateway's), recheck credentials and memberships. One heartbeat at a time: a slow Redis must
 * not pile them up.
 */
export function startHeartbeat(parts: Parts, heartbeatMs: number) {
  const { io, presence, announce, log } = parts
  let ticking: Promise<void> | undefined
  async function heartbeat() {
    const now = Date.now()
    const results = await Promise.allSettled([
      presence
        .touch(new Map([...memberSockets(io)].map(([key, sockets]) => [key, new Set(sockets.map((x) => x.id))])))
        .then((changes) => changes.forEach(announce)),
      presence.sweep().then((changes) => changes.forEach(announce)),
      presence
        .touchVisitors(new Map([...memberSockets(io, 'visitor')].map(([key, sockets]) => [key, new Set(sockets.map((x) => x.id))])))
        .then((changes) => changes.forEach(announceVisitorChange(parts))),
      presence.sweepVisitors().then((changes) => changes.forEach(announceVisitorChange(parts))),
      recheck(parts, now),
    ])
    for (const r of results) if (r.status === 'rejected') log.warn({ err: { message: (r.reason as Error).message } }, 'heartbeat step failed')
  }
  const tick = () => {
    if (!ticking) ticking = heartbeat().finally(() => (ticking = undefined))
    return ticking
  }
  const timer = setInterval(() => void tick(), heartbeatMs)
  timer.unref()
  return {
    tick,
    async stop() {
      clearInterval(timer)
      await ticking
    },
  }
}
