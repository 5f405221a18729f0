import type { Server as HttpServer } from 'node:http'
import type { Server } from 'socket.io'
import type { Deps } from '../context.js'
import type { InProcessState } from '../mode.js'
import { startSockets } from './sockets.js'

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
  const core = startSockets({ config: deps.config, log, sql: deps.sql, httpServer, presence: shared.presence, reader: shared.presence, auth: deps, rateWindows: deps.rateWindows })
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
