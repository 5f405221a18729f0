import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import { createAdapter } from '@socket.io/redis-adapter'
import { Redis } from 'ioredis'
import pino, { type Logger } from 'pino'
import { Server, type ServerOptions, type Socket } from 'socket.io'
import { ChannelSessions } from '../auth/channel-sessions.js'
import { MemberDirectory } from '../auth/members.js'
import { createMemberVerifier, createVisitorTokens } from '../auth/tokens.js'
import { listenHost, type Config } from '../config.js'
import type { Deps, Log } from '../context.js'
import { createSql, type Pool } from '../db/client.js'
import { rooms, socketIoKey } from '../events.js'
import { checkHealth } from '../health.js'
import { waitReady } from '../redis.js'
import { authenticate, HandshakeError, principalOf, type SocketPrincipal } from './auth.js'
import type { InProcessState } from '../mode.js'
import { redisPresenceReader, type PresenceReader } from '../presence.js'
import { loadVisitor, touchLastSeen } from '../visitors/visitors.js'
import { memberKey, PresenceStore, splitMemberKey, type PresenceChange, type PresenceWriter, type VisitorChange } from './presence.js'

export interface Gateway {
  io: Server
  httpServer: HttpServer
  /** Unique per process; prefixes this gateway's presence entries. */
  gatewayId: string
  log: Logger
  /** Listens on `port` (0: any free port) and resolves to the bound port. */
  listen(port: number, host?: string): Promise<number>
  /** Stops accepting, disconnects sockets, closes Redis and the database pool. Idempotent. */
  close(): Promise<void>
  /** One heartbeat now (refresh, sweep, recheck): tests and shutdown use it. */
  tick(): Promise<void>
}

export interface GatewayOptions {
  config: Config
  logger?: Logger
}

/**
 * The interval between heartbeats, and how long a socket entry stays live after one. An entry
 * lives two heartbeats less than the TTL: a live gateway refreshes it with at least one
 * heartbeat to spare (a stalled event loop does not flap members offline), and a dead gateway's
 * entries expire and are swept (every gateway sweeps each heartbeat) within PRESENCE_TTL_S,
 * with a heartbeat to spare for timer drift.
 */
export function presenceTimings(config: Config) {
  const ttlMs = config.PRESENCE_TTL_S * 1000
  const heartbeatMs = config.PRESENCE_HEARTBEAT_MS ?? Math.min(10_000, Math.floor(ttlMs / 5))
  return { heartbeatMs, entryTtlMs: ttlMs - 2 * heartbeatMs }
}

const PRESENCE_STATUSES = new Set(['online', 'away'])
/** presence:set calls a socket may make per window: every change is broadcast to the workspace. */
const PRESENCE_SET_LIMIT = { max: 20, windowMs: 10_000 }

export function gatewayLogger(config: Config): Logger {
  return pino({
    level: config.LOG_LEVEL,
    base: { service: 'gateway' },
    redact: { paths: ['*.token', '*.visitorSession', '*.secret', '*.password', 'auth'], censor: '[Redacted]' },
  })
}

/** The pieces every part of one gateway shares. */
interface Parts {
  config: Config
  log: Log
  io: Server
  sql: Pool
  presence: PresenceWriter
  /** Broadcasts a presence transition to the member's workspace (null: nothing changed). */
  announce(change: PresenceChange | null): void
  /** Sends visitor:updated for `guestId` to its workspace's members (the visitor as the API shows it). */
  announceVisitor(workspaceId: string, guestId: string): void
  /** Set when the gateway is closing: sockets that drop then keep their presence until it expires. */
  closing: { value: boolean }
}

/**
 * A gateway: Redis (adapter and presence), the database (membership), the Socket.IO server
 * with its handshake and events, the health endpoint, the heartbeat. Each part is a function
 * below; this one wires them and owns start and stop.
 */
export async function createGateway({ config, logger }: GatewayOptions): Promise<Gateway> {
  const log = logger ?? gatewayLogger(config)
  const gatewayId = randomUUID()
  const { entryTtlMs } = presenceTimings(config)
  const { pub, sub } = createRedisPair(config, log)
  const sql = createSql(config.DATABASE_URL, config.DATABASE_POOL_MAX)
  try {
    await Promise.all([waitReady(pub, 10_000), waitReady(sub, 10_000)])
  } catch (err) {
    pub.disconnect()
    sub.disconnect()
    await sql.end({ timeout: 1 })
    throw new Error(`Could not connect to REDIS_URL: ${(err as Error).message}`)
  }

  const httpServer = createServer(healthEndpoint({ sql, redis: pub, config }))
  const core = startSockets({
    config,
    log,
    sql,
    httpServer,
    adapter: createAdapter(pub, sub, { key: socketIoKey(config.REDIS_PREFIX) }),
    presence: new PresenceStore({ redis: pub, prefix: config.REDIS_PREFIX, gatewayId, entryTtlMs }),
    reader: redisPresenceReader(pub, config.REDIS_PREFIX),
    auth: { memberTokens: createMemberVerifier(config), visitorTokens: createVisitorTokens(config), memberDirectory: new MemberDirectory(sql, config.MEMBER_CACHE_TTL_MS), channelSessions: new ChannelSessions(sql, config.MEMBER_CACHE_TTL_MS) },
  })
  let closed: Promise<void> | undefined
  const close = () =>
    (closed ??= (async () => {
      await core.stop()
      await core.io.close()
      await Promise.allSettled([pub.quit(), sub.quit()])
      await sql.end({ timeout: 5 })
      log.info({ gatewayId }, 'gateway closed')
    })())

  const listen = (port: number, host = listenHost(config)) =>
    new Promise<number>((resolve, reject) => {
      httpServer.once('error', reject)
      httpServer.listen(port, host, () => {
        httpServer.off('error', reject)
        const address = httpServer.address()
        const bound = typeof address === 'object' && address ? address.port : port
        log.info({ port: bound, host, gatewayId, heartbeatMs: core.heartbeatMs, presenceTtlS: config.PRESENCE_TTL_S }, 'gateway listening')
        resolve(bound)
      })
    })

  return { io: core.io, httpServer, gatewayId, log, listen, close, tick: core.tick }
}

/** The gateway of single-process mode, on the API's own HTTP server (plugins/gateway.ts). */
export interface AttachedGateway {
  io: Server
  tick(): Promise<void>
  /** Disconnects the sockets and stops the heartbeat; the HTTP server is the API's to close. */
  close(): Promise<void>
}

/**
 * Single-process mode (src/mode.ts): the same handshake, rooms, presence rules and heartbeat on
 * the API's HTTP server (Socket.IO serves /socket.io/ there, Fastify everything else), with
 * Socket.IO's default in-memory adapter, the in-process presence store the API reads, and the
 * API's own pool and token verifiers. Events published by domain code go through this `io`.
 */
export function attachGateway(httpServer: HttpServer, deps: Deps, shared: InProcessState): AttachedGateway {
  const log = deps.log.child({ service: 'gateway' })
  const core = startSockets({ config: deps.config, log, sql: deps.sql, httpServer, presence: shared.presence, reader: shared.presence, auth: deps })
  shared.events.attach(core.io)
  log.info({ heartbeatMs: core.heartbeatMs, presenceTtlS: deps.config.PRESENCE_TTL_S }, 'gateway attached (single-process mode)')
  let closed: Promise<void> | undefined
  return {
    io: core.io,
    tick: core.tick,
    close: () =>
      (closed ??= (async () => {
        shared.events.attach(null)
        await core.stop()
        core.io.disconnectSockets(true)
        core.io.engine.close()
      })()),
  }
}

/** The Socket.IO server, its handshake, events and heartbeat: what both kinds of gateway run. */
function startSockets(opts: {
  config: Config
  log: Log
  sql: Pool
  httpServer: HttpServer
  adapter?: ServerOptions['adapter']
  presence: PresenceWriter
  /** What visitor:updated payloads read (the same presence, as the API reads it). */
  reader: PresenceReader
  auth: Parameters<typeof authenticate>[1]
}) {
  const { config, log, httpServer } = opts
  const { heartbeatMs } = presenceTimings(config)
  const io = new Server(httpServer, {
    // Credentials travel in the handshake payload, never in cookies, so any origin may connect
    // (the widget runs on customers' sites); what a socket receives depends only on its credentials.
    cors: { origin: true, credentials: false },
    serveClient: false,
    maxHttpBufferSize: 16 * 1024,
    ...(opts.adapter ? { adapter: opts.adapter } : {}),
  })
  const parts: Parts = {
    config,
    log,
    io,
    sql: opts.sql,
    presence: opts.presence,
    announce: (change) => {
      if (!change) return
      log.debug({ workspaceId: change.workspaceId, userId: change.userId, status: change.status }, 'presence changed')
      io.to(rooms.workspace(change.workspaceId)).emit('user:presence', { userId: change.userId, status: change.status, at: change.at })
    },
    announceVisitor: (workspaceId, guestId) => {
      loadVisitor({ sql: opts.sql, presence: opts.reader, log }, workspaceId, guestId).then(
        (visitor) => {
          if (visitor) io.to(rooms.workspace(workspaceId)).emit('visitor:updated', { visitor })
        },
        (err: Error) => log.warn({ err: { message: err.message }, guestId }, 'visitor:updated not sent'),
      )
    },
    closing: { value: false },
  }
  io.use(handshake(parts, opts.auth))
  io.on('connection', (socket: Socket) => onConnection(parts, socket))
  const heartbeat = startHeartbeat(parts, heartbeatMs)
  return {
    io,
    heartbeatMs,
    tick: heartbeat.tick,
    async stop() {
      parts.closing.value = true
      await heartbeat.stop()
    },
  }
}

/**
 * The adapter's two Redis connections (commands and subscriptions). A Redis outage makes ioredis
 * report every reconnect attempt: one log line every few seconds is enough. The adapter fires
 * publish() and drops the promise: a failed broadcast is a log line, not an unhandled rejection
 * that would stop the process.
 */
function createRedisPair(config: Config, log: Logger) {
  const pub = new Redis(config.REDIS_URL, {
    maxRetriesPerRequest: 2,
    connectTimeout: 2000,
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  })
  const sub = pub.duplicate()
  let lastRedisWarning = 0
  const onRedisError = (err: Error) => {
    if (Date.now() - lastRedisWarning > 5000) {
      lastRedisWarning = Date.now()
      log.warn({ err: { message: err.message } }, 'redis error')
    }
  }
  pub.on('error', onRedisError)
  sub.on('error', onRedisError)
  const publish = pub.publish.bind(pub) as (channel: string, message: string | Buffer) => Promise<number>
  ;(pub as unknown as { publish: typeof publish }).publish = (channel, message) =>
    publish(channel, message).catch((err: Error) => {
      log.warn({ err: { message: err.message } }, 'socket.io broadcast failed')
      return 0
    })
  return { pub, sub }
}

/** GET/HEAD /health, as the API answers it; anything else is 404. */
function healthEndpoint(deps: Parameters<typeof checkHealth>[0]) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]
    if ((req.method === 'GET' || req.method === 'HEAD') && (path === '/health' || path === '/health/')) {
      checkHealth(deps).then((body) => {
        res.writeHead(body.status === 'ok' ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        res.end(req.method === 'HEAD' ? undefined : JSON.stringify(body))
      })
      return
    }
    res.writeHead(404, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: 'Not found' }))
  }
}

/** The handshake middleware: authenticates the socket, and records a member's presence before `connect`. */
function handshake(parts: Parts, auth: Parameters<typeof authenticate>[1]) {
  const { log, presence, announce } = parts
  return (socket: Socket, next: (err?: Error) => void) => {
    authenticate(socket.handshake.auth, auth, log)
      .then(async (principal) => {
        socket.data = principal
        if (principal.kind === 'member') {
          // Recorded before the client hears `connect`: a tab opened and another closed right
          // after never flashes the member offline. A socket that never completes the
          // connection is not refreshed by the heartbeat and expires like a dead gateway's.
          try {
            announce(await presence.add(principal.workspaceId, principal.userId, socket.id))
          } catch (err) {
            presenceFailed(log, err as Error) // the next heartbeat records it
          }
        }
        next()
      })
      .catch((err: unknown) => {
        if (err instanceof HandshakeError) return next(err)
        log.error({ err }, 'socket handshake failed')
        const e = new Error('INTERNAL_ERROR') as Error & { data?: unknown }
        e.data = { code: 'INTERNAL_ERROR', message: 'Could not check the credentials; retry' }
        next(e)
      })
  }
}

const presenceFailed = (log: Log, err: Error) => log.warn({ err: { message: err.message } }, 'presence update failed')

/** A connected socket joins its rooms; a member's socket may set its presence, and leaves it on disconnect. */
function onConnection(parts: Parts, socket: Socket) {
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
      reply({ ok: false, code: 'RATE_LIMITED', message: 'Too many presence:set calls; retry later' })
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
      reply({ ok: false, code: 'VALIDATION_ERROR', message: "presence:set takes { status: 'online' | 'away' }" })
      return
    }
    presence.setStatus(workspaceId, userId, status as 'online' | 'away').then(
      (change) => {
        announce(change)
        reply({ ok: true, status })
      },
      (err: Error) => {
        presenceFailed(log, err)
        reply({ ok: false, code: 'UNAVAILABLE', message: 'Presence could not be updated; retry' })
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

const announceVisitorChange = (parts: Parts) => (change: VisitorChange | null) => {
  if (change) parts.announceVisitor(change.workspaceId, change.guestId)
}

/** page:visit calls a socket may send to Redis per window (the shared one-a-second gate drops the rest). */
const PAGE_VISIT_LIMIT = { max: 10, windowMs: 10_000 }
const PAGE_VISIT_KEYS = new Set(['url', 'title'])

/** A `page:visit` payload as the contract allows it, or null (dropped). */
export function pageVisitOf(payload: unknown): { url: string; title: string } | null {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return null
  const p = payload as Record<string, unknown>
  if (!Object.keys(p).every((k) => PAGE_VISIT_KEYS.has(k))) return null
  const { url, title = '' } = p
  if (typeof url !== 'string' || url.length > 2000 || typeof title !== 'string' || title.length > 200) return null
  if (url.includes('\u0000') || title.includes('\u0000')) return null
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null
  } catch {
    return null
  }
  return { url, title }
}

/**
 * A visitor's socket: it counts as online (lastSeenAt moves), sends page visits, and goes offline
 * with its last socket; each transition and recorded page reaches the workspace as visitor:updated.
 */
function onVisitorConnection(parts: Parts, socket: Socket, who: Extract<SocketPrincipal, { kind: 'visitor' }>) {
  const { log, presence, closing, sql } = parts
  const { workspaceId, guestId } = who
  const announce = announceVisitorChange(parts)
  touchLastSeen(sql, guestId)
    .catch((err: Error) => log.warn({ err: { message: err.message } }, 'lastSeenAt not updated'))
    .then(() => presence.addVisitor(workspaceId, guestId, socket.id))
    .then(announce, (err: Error) => presenceFailed(log, err)) // the next heartbeat records it

  const allow = socketWindow(PAGE_VISIT_LIMIT)
  socket.on('page:visit', (payload: unknown, ack?: unknown) => {
    const reply = typeof ack === 'function' ? (ack as (r: unknown) => void) : () => {}
    const visit = pageVisitOf(payload)
    if (!visit || !allow()) return reply({ ok: false, recorded: false })
    presence.recordPageVisit(guestId, visit).then(
      (recorded) => {
        if (recorded) parts.announceVisitor(workspaceId, guestId)
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
    presence.removeVisitor(workspaceId, guestId, socket.id).then(announce, (err: Error) => presenceFailed(log, err))
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
function startHeartbeat(parts: Parts, heartbeatMs: number) {
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
