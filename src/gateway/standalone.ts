import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import { createAdapter } from '@socket.io/redis-adapter'
import pino, { type Logger } from 'pino'
import type { Server } from 'socket.io'
import { ChannelSessions } from '../auth/channel-sessions.js'
import { MemberDirectory } from '../auth/members.js'
import { createMemberVerifier, createVisitorTokens } from '../auth/tokens.js'
import { listenHost, type Config } from '../config.js'
import { createSql } from '../db/client.js'
import { errorBody, pathNotFound } from '../errors.js'
import { socketIoKey } from '../events.js'
import { checkHealth } from '../health.js'
import { redisPresenceReader } from '../presence.js'
import { createRateWindows } from '../rate-windows.js'
import { Cluster } from 'ioredis'
import { presencePrefix, redisClient, waitReady } from '../redis.js'
import { PresenceStore } from './presence.js'
import { startSockets } from './sockets.js'
import { presenceTimings } from './timings.js'

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

export function gatewayLogger(config: Config): Logger {
  return pino({
    level: config.LOG_LEVEL,
    base: { service: 'gateway' },
    redact: { paths: ['*.token', '*.visitorSession', '*.secret', '*.password', 'auth'], censor: '[Redacted]' },
  })
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
  const sql = createSql(config.DATABASE_URL, config.DATABASE_POOL_MAX, {}, config.DATABASE_POOLER !== 'transaction')
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
    presence: new PresenceStore({ redis: pub, prefix: presencePrefix(config), gatewayId, entryTtlMs }),
    reader: redisPresenceReader(pub, presencePrefix(config)),
    // The abuse limits' windows, as the API counts them: shared in Redis, this process while it fails.
    rateWindows: createRateWindows(config, pub, log),
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

/**
 * The adapter's two Redis connections (commands and subscriptions). A Redis outage makes ioredis
 * report every reconnect attempt: one log line every few seconds is enough. The adapter fires
 * publish() and drops the promise: a failed broadcast is a log line, not an unhandled rejection
 * that would stop the process.
 */
function createRedisPair(config: Config, log: Logger) {
  const pub = redisClient(config.REDIS_URL, {
    maxRetriesPerRequest: 2,
    connectTimeout: 2000,
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  })
  // A second client of the same kind for the subscriptions (a cluster's duplicate takes other arguments).
  const sub = pub instanceof Cluster ? pub.duplicate() : pub.duplicate()
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
    const e = pathNotFound()
    res.writeHead(e.statusCode, { 'content-type': 'application/json' })
    res.end(JSON.stringify(errorBody(e.statusCode, e.code, e.message)))
  }
}
