import fp from 'fastify-plugin'
import { attachGateway, type AttachedGateway } from '../src/gateway/attached.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway on this server in single-process mode (src/mode.ts); null when gateways run apart. */
    gateway: AttachedGateway | null
  }
}

/**
 * Single-process mode: the real-time gateway shares the API's HTTP server and port (Socket.IO at
 * /socket.io/). Its sockets are disconnected before the server stops accepting (preClose), so
 * open WebSockets do not hold the shutdown. With Redis, gateways are processes of their own.
 */
export default fp(
  async (app) => {
    const shared = app.deps.shared
    const gateway = shared.kind === 'in-process' ? attachGateway(app.server, app.deps, shared) : null
    app.decorate('gateway', gateway)
    if (gateway) app.addHook('preClose', () => gateway.close())
  },
  { name: 'gateway', dependencies: ['deps'] },
)
