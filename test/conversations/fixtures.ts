import { Redis } from 'ioredis'
import notepack from 'notepack.io'
import type { App } from '../../src/app.js'
import { socketIoKey } from '../../src/events.js'
import type { SeededGuest, SeededWorkspace, TestContext } from '../helper.js'

export interface PublishedEvent {
  event: string
  payload: any
  rooms: string[]
}

/**
 * Listens on Redis to what the API publishes for the gateway, decoding the Socket.IO Redis
 * adapter's broadcast format ([uid, packet, {rooms}] in msgpack), as the gateway would.
 */
export async function listenEvents(t: TestContext, redisPrefix: string) {
  const sub = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379')
  const events: PublishedEvent[] = []
  const waiters: { pred: (e: PublishedEvent) => boolean; resolve: (e: PublishedEvent) => void }[] = []
  sub.on('pmessageBuffer', (_pattern: Buffer, _channel: Buffer, message: Buffer) => {
    const [, packet, opts] = notepack.decode(message) as [string, { data: [string, unknown] }, { rooms: string[] }]
    const e = { event: packet.data[0], payload: packet.data[1], rooms: [...opts.rooms].sort() }
    events.push(e)
    for (const w of [...waiters]) {
      if (w.pred(e)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(e)
      }
    }
  })
  await sub.psubscribe(`${socketIoKey(redisPrefix)}#/#*`)
  t.teardown(() => sub.disconnect())
  return {
    events,
    clear: () => events.splice(0),
    /** The first event (seen or coming) matching `pred`; fails after `ms`. */
    waitFor(pred: (e: PublishedEvent) => boolean, ms = 2000): Promise<PublishedEvent> {
      const seen = events.find(pred)
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('event not published in time')), ms)
        waiters.push({ pred, resolve: (e) => (clearTimeout(timer), resolve(e)) })
      })
    },
    /** Lets in-flight publishes arrive (for asserting that nothing was published). */
    settle: () => new Promise((r) => setTimeout(r, 150)),
  }
}

export async function startConversation(app: App, guest: SeededGuest): Promise<any> {
  const res = await app.inject({
    method: 'POST',
    url: '/conversations',
    headers: guest.headers,
    payload: { channelId: guest.channelId, guestId: guest.guestId },
  })
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

export async function send(app: App, headers: Record<string, string>, id: string, body: string, clientMessageId?: string) {
  return app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers, payload: { body, clientMessageId } })
}

export async function patch(app: App, headers: Record<string, string>, id: string, action: string, payload?: unknown) {
  return app.inject({ method: 'PATCH', url: `/conversations/${id}/${action}`, headers, ...(payload ? { payload } : {}) })
}

export async function unreadCount(app: App, ws: SeededWorkspace, as = ws.agent) {
  const res = await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: as.headers })
  if (res.statusCode !== 200) throw new Error(`unread-count failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

/**
 * The unread state recounted by brute force in JS from the rows (conversations, messages), for
 * comparison with the counters.
 */
export async function bruteForceCounts(app: App, workspaceId: string, userId: string) {
  const convs = await app.deps.sql<{ id: string; status: string; channel_id: string; assigned_agent_id: string | null; deleted_at: string | null; agent_last_seen_at: string | null; unread_count: number }[]>`
    SELECT id, status, channel_id, assigned_agent_id, deleted_at, agent_last_seen_at, unread_count FROM conversations WHERE workspace_id = ${workspaceId}`
  const msgs = await app.deps.sql<{ conversation_id: string; sender_type: string; micros: string }[]>`
    SELECT conversation_id, sender_type, (extract(epoch from created_at) * 1000000)::bigint::text AS micros FROM messages WHERE workspace_id = ${workspaceId}`
  const seen = await app.deps.sql<{ id: string; micros: string | null }[]>`
    SELECT id, (extract(epoch from agent_last_seen_at) * 1000000)::bigint::text AS micros FROM conversations WHERE workspace_id = ${workspaceId}`
  const seenMark = new Map(seen.map((s) => [s.id, s.micros === null ? null : BigInt(s.micros)]))
  const out = { total: 0, mine: 0, unassigned: 0, messages: 0, byChannel: {} as Record<string, number>, byTeam: {} as Record<string, number> }
  const unreadById: Record<string, number> = {}
  const storedById: Record<string, number> = {}
  for (const c of convs) {
    if (c.deleted_at) continue
    const mark = seenMark.get(c.id)
    const n = msgs.filter((m) => m.conversation_id === c.id && m.sender_type === 'GUEST' && (mark === null || mark === undefined || BigInt(m.micros) > mark)).length
    unreadById[c.id] = n
    storedById[c.id] = c.unread_count
    if (c.status !== 'OPEN' || n === 0) continue
    out.total++
    out.messages += n
    if (c.assigned_agent_id === null) out.unassigned++
    if (c.assigned_agent_id === userId) out.mine++
    out.byChannel[c.channel_id] = (out.byChannel[c.channel_id] ?? 0) + 1
  }
  return { counts: out, unreadById, storedById }
}
