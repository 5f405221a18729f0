import rateLimit, { type FastifyRateLimitStore, type RateLimitOptions } from '@fastify/rate-limit'
import type { FastifyReply, FastifyRequest, onErrorHookHandler, onRequestHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { clientAddressKey } from '../src/client-address.js'
import type { Config } from '../src/config.js'
import { rateLimited } from '../src/errors.js'
import type { RateWindows } from '../src/rate-windows.js'
import { isUuid } from '../src/uuid.js'

/**
 * A limit of the abuse-limit table (API.md section 2, docs/security.md): @fastify/rate-limit's
 * route options, plus two things one row of the table may need:
 * - `also`: further limits the same request must pass, each with its own key and budget (a
 *   visitor's conversations are bounded per guest and per client address);
 * - `countErrors`: count only requests that fail with one of these error codes (failed webhook
 *   verifications); a key that reached `max` is refused (429) before anything else runs, until
 *   its window ends.
 * Every limit has a `groupId`, its name: the budget is per limit and key, shared by the routes
 * that declare it (the library's own stores keep one per route).
 */
export interface Limit extends RateLimitOptions {
  groupId: string
  also?: Limit[]
  countErrors?: string[]
}

/**
 * Time-window rate limits: the one way to declare one is the route's own configuration, next to
 * its access, naming a limit of `limits` below:
 *
 *   config: { access: 'public', rateLimit: limits.publicStatus(app.config) }
 *
 * Counted by `deps.rateWindows` (src/rate-windows.ts): in Redis, so every replica shares them,
 * and in this process while Redis fails, with the same numbers: a limit never switches off. A
 * count about data rather than time (open conversations of a guest, transcript mails per
 * conversation or recipient) is a quota checked in the transaction, not a rate limit
 * (docs/architecture.md).
 *
 * Hooks: limits keyed by the caller (guest, workspace) run at preHandler, after authentication
 * and validation, so requests refused for those reasons never use up a budget and strangers
 * cannot use up someone else's; limits keyed by the client address alone run at onRequest, before
 * the body is read.
 */
export const limits = {
  /**
   * POST /auth: AUTH_RATE_LIMIT_PER_MIN per client address and channel. preValidation: the body
   * is parsed (channelId is known) and malformed attempts count too.
   */
  visitorBootstrap: (config: Config): Limit => ({
    groupId: 'auth',
    max: config.AUTH_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'preValidation',
    keyGenerator: (request) => {
      const channelId = (request.body as { channelId?: unknown } | undefined)?.channelId
      return `${addressKey(request)}:${isUuid(channelId) ? channelId.toLowerCase() : '-'}`
    },
  }),
  /** The anonymous /api/public/conversations routes: one budget per client address for all of them. */
  publicStatus: (config: Config): Limit => ({
    groupId: 'public',
    max: config.PUBLIC_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'onRequest',
    keyGenerator: addressKey,
  }),
  /** GET /support/* (widget configuration): SUPPORT_RATE_LIMIT_PER_MIN per client address, its own budget. */
  support: (config: Config): Limit => ({
    groupId: 'support',
    max: config.SUPPORT_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'onRequest',
    keyGenerator: addressKey,
  }),
  /**
   * Conversations a visitor starts (POST /conversations, and the offline messages of /support):
   * VISITOR_CONVERSATIONS_PER_HOUR per guest (an anonymous caller counts per address), and
   * VISITOR_CONVERSATIONS_PER_ADDRESS_PER_HOUR per client address, which bounds one address
   * making many guests.
   */
  visitorConversations: (config: Config): Limit => ({
    groupId: 'visitor-conversations',
    max: config.VISITOR_CONVERSATIONS_PER_HOUR,
    timeWindow: 3_600_000,
    hook: 'preHandler',
    keyGenerator: guestKey,
    also: [
      {
        groupId: 'visitor-conversations-address',
        max: config.VISITOR_CONVERSATIONS_PER_ADDRESS_PER_HOUR,
        timeWindow: 3_600_000,
        hook: 'preHandler',
        keyGenerator: addressKey,
      },
    ],
  }),
  /** Messages a visitor posts: VISITOR_MESSAGES_PER_MIN per guest; members are not limited here. */
  visitorMessages: (config: Config): Limit => ({
    groupId: 'visitor-messages',
    max: config.VISITOR_MESSAGES_PER_MIN,
    timeWindow: 60_000,
    hook: 'preHandler',
    keyGenerator: guestKey,
    allowList: notVisitor,
  }),
  /** Uploads a visitor makes: VISITOR_UPLOADS_PER_HOUR per guest; members are not limited here. */
  visitorUploads: (config: Config): Limit => ({
    groupId: 'visitor-uploads',
    max: config.VISITOR_UPLOADS_PER_HOUR,
    timeWindow: 3_600_000,
    hook: 'preHandler',
    keyGenerator: guestKey,
    allowList: notVisitor,
  }),
  /**
   * Failed webhook verifications, both providers in one budget: WEBHOOK_FAILURES_PER_MIN per
   * client address. Only INVALID_SIGNATURE answers count, so a provider's genuine deliveries are
   * never limited; an address that reached the limit gets 429 before its body is read, so
   * provider B's verification API is not called for it.
   */
  webhookFailures: (config: Config): Limit => ({
    groupId: 'webhook-failures',
    max: config.WEBHOOK_FAILURES_PER_MIN,
    timeWindow: 60_000,
    hook: 'onRequest',
    keyGenerator: addressKey,
    countErrors: ['INVALID_SIGNATURE'],
  }),
  /**
   * POST /support/csat: CSAT_RATE_LIMIT_PER_MIN per guest. Each rating (a replacement too)
   * rewrites the conversation's metric events and rollups.
   */
  csat: (config: Config): Limit => ({
    groupId: 'csat',
    max: config.CSAT_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'preHandler',
    keyGenerator: guestKey,
  }),
  /**
   * counts/reconcile reads every live conversation of the workspace and its unread messages (it
   * holds no writer, but it is the costliest read there is): RECONCILE_PER_MIN per workspace.
   */
  reconcile: (config: Config): Limit => ({
    groupId: 'reconcile',
    max: config.RECONCILE_PER_MIN,
    timeWindow: 60_000,
    hook: 'preHandler',
    keyGenerator: (request) => workspaceKey(request),
  }),
}

/** The client address as every limit keys it: IPv6 by its /64 (src/client-address.ts). */
const addressKey = (request: FastifyRequest) => clientAddressKey(request.ip)

/** A visitor's guest; a caller without one (anonymous offline messages) counts per client address. */
function guestKey(request: FastifyRequest): string {
  const caller = request.ctx?.caller
  return caller?.kind === 'visitor' ? `g:${caller.guestId}` : `a:${addressKey(request)}`
}

const notVisitor = (request: FastifyRequest) => request.ctx?.caller.kind !== 'visitor'

const workspaceKey = (request: FastifyRequest) => {
  const caller = request.ctx?.caller
  return caller?.kind === 'member' || caller?.kind === 'visitor' ? caller.workspaceId : addressKey(request)
}

/** @fastify/rate-limit's store over the process's windows: one counter per `<limit>:<key>`. */
function windowStore(windows: RateWindows) {
  const answer = (p: Promise<{ current: number; ttl: number }>, callback: (error: Error | null, result?: { current: number; ttl: number }) => void) =>
    p.then((r) => callback(null, r), (err: Error) => callback(err))
  class WindowStore implements FastifyRateLimitStore {
    constructor(
      _options: unknown,
      private readonly bucket = '',
    ) {}

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number) {
      answer(windows.incr(`${this.bucket}:${key}`, timeWindow), callback)
    }

    read(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void) {
      answer(windows.read(`${this.bucket}:${key}`), callback)
    }

    /** The store of one limit (the library passes the merged options of a route or a limiter). */
    child(options: object) {
      const { groupId } = options as { groupId?: string }
      if (!groupId) throw new Error('every limit of plugins/rate-limit.ts names its groupId')
      return new WindowStore(undefined, groupId)
    }
  }
  return WindowStore
}

type Check = (request: FastifyRequest, options?: { increment: boolean }) => Promise<{
  isAllowed: boolean
  remaining?: number
  ttlInSeconds?: number
  isExceeded?: boolean
}>

const pushHook = (route: RouteOptions, hook: 'onRequest' | 'preValidation' | 'preHandler' | 'onError', fn: unknown) => {
  const existing = route[hook] ? [route[hook]].flat() : []
  ;(route as unknown as Record<string, unknown[]>)[hook] = [...existing, fn]
}

export default fp(
  async (app) => {
    // Before the library's own onRoute: a limit that counts errors is not the library's usual
    // "count every request", so it is taken out of the route's configuration and applied here
    // with the library's limiter (app.createRateLimit).
    app.addHook('onRoute', (route) => {
      const limit = route.config?.rateLimit as Limit | undefined
      if (!limit || !limit.countErrors) return
      const check = app.createRateLimit(limit) as Check
      const codes = new Set(limit.countErrors)
      const refuseWhenSpent: onRequestHookHandler = async (request) => {
        const r = await check(request, { increment: false })
        if (!r.isAllowed && r.remaining === 0) throw rateLimited(Math.max(1, r.ttlInSeconds ?? 1))
      }
      const countFailure: onErrorHookHandler = async (request: FastifyRequest, _reply: FastifyReply, error: Error & { code?: string }) => {
        if (error.code && codes.has(error.code)) await check(request)
      }
      pushHook(route, limit.hook === 'preHandler' || limit.hook === 'preValidation' ? limit.hook : 'onRequest', refuseWhenSpent)
      pushHook(route, 'onError', countFailure)
      route.config!.rateLimit = false
    })

    await app.register(rateLimit, {
      global: false,
      store: windowStore(app.deps.rateWindows),
      // Never skip: the windows fall back to this process when Redis fails (src/rate-windows.ts).
      skipOnError: false,
      errorResponseBuilder: (_req, limit) => rateLimited(Math.max(1, Math.ceil(limit.ttl / 1000))),
    })

    // After the library's: the further limits of a row, each its own budget, counted once the
    // first one let the request through.
    app.addHook('onRoute', (route) => {
      const limit = route.config?.rateLimit as Limit | false | undefined
      if (!limit || !limit.also) return
      for (const extra of limit.also) {
        const check = app.createRateLimit(extra) as Check
        pushHook(route, extra.hook === 'onRequest' || extra.hook === 'preValidation' ? extra.hook : 'preHandler', async (request: FastifyRequest) => {
          const r = await check(request)
          if (!r.isAllowed && r.isExceeded) throw rateLimited(Math.max(1, r.ttlInSeconds ?? 1))
        })
      }
    })
  },
  { name: 'rate-limit', dependencies: ['deps'] },
)
