import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import { memberOrigins } from '../src/config.js'

/**
 * CORS per the contract: routes a visitor may call, and public ones, allow any origin (POST /auth
 * enforces the channel's allowedOrigins itself); member-only routes allow CORS_ORIGINS.
 * A preflight has not reached its route yet, so the open routes' paths are collected as they
 * are declared and matched by pattern.
 */
export default fp(
  async (app) => {
    const open: { method: string; pattern: RegExp }[] = []
    app.addHook('onRoute', (route) => {
      const access = route.config?.access
      const isOpen = access === undefined || access === 'public' || access.visitor === true
      if (!isOpen) return
      const pattern = new RegExp(
        '^' +
          route.url
            .replace(/[.+?^${}()|[\]\\*]/g, '\\$&')
            .replace(/:[^/]+/g, '[^/]+')
            .replace(/\\\*/g, '.*') +
          '/?$',
      )
      for (const method of [route.method].flat()) open.push({ method, pattern })
    })
    const allowed = new Set(memberOrigins(app.config))

    await app.register(cors, {
      hook: 'onRequest',
      delegator: (req, cb) => {
        const path = (req.url ?? '/').split('?')[0]
        const method = req.method === 'OPTIONS' ? String(req.headers['access-control-request-method'] ?? 'GET').toUpperCase() : req.method
        const isOpen = open.some((r) => r.method === method && r.pattern.test(path))
        const origin = req.headers.origin
        cb(null, {
          origin: isOpen ? true : origin !== undefined && allowed.has(origin),
          methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
          allowedHeaders: ['authorization', 'content-type', 'x-workspace-id', 'x-visitor-session', 'x-channel-token'],
          exposedHeaders: ['Content-Disposition', 'Retry-After', 'x-request-id'],
          maxAge: 600,
        })
      },
    })
  },
  { name: 'cors', dependencies: ['auth'] },
)
