import cors from '@fastify/cors'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Access } from '../src/auth/callers.js'
import { memberOrigins } from '../src/config.js'

/** Routes a visitor may call, and public ones, are open to any origin; member-only routes are not. */
const isOpen = (access: Access | undefined) => access === undefined || access === 'public' || access.visitor === true

declare module 'fastify' {
  interface FastifyContextConfig {
    /** On the preflight route of a URL: whether each method's route there is open to any origin. */
    preflight?: Map<string, boolean>
  }
}

/**
 * CORS per the contract: open routes allow any origin (POST /auth enforces the channel's
 * allowedOrigins itself); member-only routes allow CORS_ORIGINS. A request is judged by the route
 * that answers it, read from that route's own access. A preflight names its method in
 * Access-Control-Request-Method and reaches no route of ours, so every URL gets an OPTIONS route
 * as its routes are declared, holding the openness of each method: the router then picks the URL
 * a preflight is about by its own precedence (`/conversations/closed`, member-only, before the
 * visitor-callable `/conversations/:id`).
 */
export default fp(
  async (app) => {
    const preflights = new Map<string, Map<string, boolean>>()
    app.addHook('onRoute', function (route) {
      const methods = [route.method].flat()
      if (methods.includes('OPTIONS')) return
      let open = preflights.get(route.url)
      if (!open) {
        preflights.set(route.url, (open = new Map()))
        // A preflight the CORS hook does not answer (origin not allowed) is a 404, as for an unknown URL.
        this.route({ method: 'OPTIONS', url: route.routePath, config: { preflight: open }, schema: { hide: true }, handler: (_request, reply) => reply.callNotFound() })
      }
      for (const method of methods) open.set(method, isOpen(route.config?.access))
    })

    const allowed = new Set(memberOrigins(app.config))
    const openFor = (req: FastifyRequest) => {
      const config = req.routeOptions.config
      if (req.routeOptions.url === undefined) return false // no route: the 404 handler answers
      if (req.method !== 'OPTIONS') return isOpen(config.access)
      return config.preflight?.get(String(req.headers['access-control-request-method'] ?? 'GET').toUpperCase()) ?? false
    }
    await app.register(cors, {
      hook: 'onRequest',
      delegator: (req, cb) => {
        const origin = req.headers.origin
        cb(null, {
          origin: openFor(req) ? true : origin !== undefined && allowed.has(origin),
          methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
          allowedHeaders: ['authorization', 'content-type', 'x-workspace-id', 'x-visitor-session', 'x-channel-token', 'idempotency-key'],
          exposedHeaders: ['Content-Disposition', 'Retry-After', 'x-request-id'],
          maxAge: 600,
        })
      },
    })
  },
  { name: 'cors', dependencies: ['auth'] },
)
