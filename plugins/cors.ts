import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import { memberOrigins } from '../src/config.js'

/**
 * CORS per the contract: routes a visitor may call, and public ones, allow any origin (POST /auth
 * enforces the channel's allowedOrigins itself); member-only routes allow CORS_ORIGINS.
 * A preflight has not reached its route yet, so every route's path is collected as it is
 * declared and matched by pattern. Where several patterns match a path, the one the router would
 * pick decides (segment by segment, static before :param before *): `/conversations/closed`
 * (member-only) must not inherit the open CORS of `/conversations/:id` (visitor-callable).
 */
export default fp(
  async (app) => {
    const routes: { method: string; pattern: RegExp; open: boolean; rank: number[] }[] = []
    app.addHook('onRoute', (route) => {
      const access = route.config?.access
      const isOpen = access === undefined || access === 'public' || access.visitor === true
      const pattern = new RegExp(
        '^' +
          route.url
            .replace(/[.+?^${}()|[\]\\*]/g, '\\$&')
            .replace(/:[^/]+/g, '[^/]+')
            .replace(/\\\*/g, '.*') +
          '/?$',
      )
      const rank = route.url.split('/').map((seg) => (seg.includes('*') ? 2 : seg.includes(':') ? 1 : 0))
      for (const method of [route.method].flat()) routes.push({ method, pattern, open: isOpen, rank })
    })
    const precedes = (a: number[], b: number[]) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]!
      return false
    }
    const isOpenPath = (method: string, path: string) => {
      let best: (typeof routes)[number] | undefined
      for (const r of routes) {
        if (r.method !== method || !r.pattern.test(path)) continue
        if (!best || precedes(r.rank, best.rank)) best = r
      }
      return best?.open ?? false
    }
    const allowed = new Set(memberOrigins(app.config))

    await app.register(cors, {
      hook: 'onRequest',
      delegator: (req, cb) => {
        const path = (req.url ?? '/').split('?')[0]
        const method = req.method === 'OPTIONS' ? String(req.headers['access-control-request-method'] ?? 'GET').toUpperCase() : req.method
        const isOpen = isOpenPath(method, path)
        const origin = req.headers.origin
        cb(null, {
          origin: isOpen ? true : origin !== undefined && allowed.has(origin),
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
