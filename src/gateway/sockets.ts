import type { Server as HttpServer } from 'node:http'
import { Server, type ServerOptions, type Socket } from 'socket.io'
import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import type { Pool } from '../db/client.js'
import { HandshakeError, handshakeInternalError } from '../errors.js'
import { rooms } from '../events.js'
import type { PresenceReader } from '../presence.js'
import { loadVisitor } from '../visitors/visitors.js'
import { authenticate } from './auth.js'
import { onConnection } from './connections.js'
import { startHeartbeat } from './heartbeat.js'
import { presenceFailed, type Parts } from './parts.js'
import type { PresenceWriter } from './presence.js'
import { presenceTimings, visitorAnnouncements } from './timings.js'
import { visitorAnnouncer } from './visitor-announcer.js'
import { visitorConnectionRefusal } from './limits.js'
import { clientAddressOf } from '../client-address.js'
import type { RateWindows } from '../rate-windows.js'

/** The Socket.IO server, its handshake, events and heartbeat: what both kinds of gateway run. */
export function startSockets(opts: {
  config: Config
  log: Log
  sql: Pool
  httpServer: HttpServer
  adapter?: ServerOptions['adapter']
  presence: PresenceWriter
  /** What visitor:updated payloads read (the same presence, as the API reads it). */
  reader: PresenceReader
  auth: Parameters<typeof authenticate>[1]
  rateWindows: RateWindows
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
    visitors: visitorAnnouncer(
      (workspaceId, guestId, onlyIfOffline) =>
        loadVisitor({ sql: opts.sql, presence: opts.reader, log }, workspaceId, guestId).then(
          (visitor) => {
            if (!visitor || (onlyIfOffline && visitor.online)) return null
            io.to(rooms.workspace(workspaceId)).emit('visitor:updated', { visitor })
            return visitor.online
          },
          (err: Error) => {
            log.warn({ err: { message: err.message }, guestId }, 'visitor:updated not sent')
            return null
          },
        ),
      visitorAnnouncements,
    ),
    rateWindows: opts.rateWindows,
    clientAddress: clientAddressOf(config.TRUST_PROXY),
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
      parts.visitors.stop()
      await heartbeat.stop()
    },
  }
}

/**
 * The handshake middleware: authenticates the socket, applies the visitor connection limits, and
 * records a member's presence before `connect`.
 */
function handshake(parts: Parts, auth: Parameters<typeof authenticate>[1]) {
  const { log, presence, announce } = parts
  return (socket: Socket, next: (err?: Error) => void) => {
    authenticate(socket.handshake.auth, auth, log)
      .then(async (principal) => {
        if (principal.kind === 'visitor') {
          const refused = await visitorConnectionRefusal(parts, principal.guestId, parts.clientAddress(socket.request))
          if (refused) return next(refused)
        }
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
        next(handshakeInternalError())
      })
  }
}
