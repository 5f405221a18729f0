import { randomUUID } from 'node:crypto'
import { isEmbeddedDatabase, isSingleProcess, type Config } from './config.js'
import type { Log } from './logger.js'
import { startEmbeddedPostgres } from './db/embedded.js'
import { createLocalPublisher, createPublisher, type EventPublisher, type LocalPublisher } from './events.js'
import { MemoryPresenceStore } from './gateway/memory-presence.js'
import { presenceTimings } from './gateway/timings.js'
import { redisPresenceReader, type PresenceReader } from './presence.js'
import { createRateWindows, type RateWindows } from './rate-windows.js'
import { closeRedis, createRedis, presencePrefix, waitReady, type RedisClient } from './redis.js'

/**
 * The one place that decides, at start, how this process runs (docs/deployment.md):
 *
 * - the database: DATABASE_URL, or with `embedded:` (the default) a PostgreSQL of Parley's own
 *   under PARLEY_DIR (`provideDatabase`, called by the entry points before migrations);
 * - what processes share (`createSharedState`, called by createDeps): Redis, so any number of API
 *   replicas and gateways work together, or with `memory:` (the default) single-process mode:
 *   events go through the gateway attached to the API's own server (plugins/gateway.ts),
 *   presence and rate limits are kept in this process's memory.
 *
 * Domain code never asks which: it uses `ctx.events` and `ctx.presence`, the same interfaces
 * either way. NODE_ENV=production refuses both embedded forms (src/config.ts).
 */

export interface ProvidedDatabase {
  url: string
  /** Stops the embedded server (nothing for a URL). */
  stop(): Promise<void>
}

export async function provideDatabase(config: Config, log: Log): Promise<ProvidedDatabase> {
  if (!isEmbeddedDatabase(config)) return { url: config.DATABASE_URL, stop: async () => {} }
  const pg = await startEmbeddedPostgres({ dir: config.PARLEY_DIR, port: config.EMBEDDED_PG_PORT, log })
  return { url: pg.url, stop: pg.stop }
}

/** Redis: shared with every replica and gateway. */
export interface RedisState {
  kind: 'redis'
  redis: RedisClient
  events: EventPublisher
  presence: PresenceReader
  /** Counted in Redis, in this process while Redis fails (src/rate-windows.ts). */
  rateWindows: RateWindows
  close(): Promise<void>
}

/** Single-process mode: this process's memory; the gateway attaches to the API's server. */
export interface InProcessState {
  kind: 'in-process'
  events: LocalPublisher
  /** Written by the attached gateway, read by the API. */
  presence: MemoryPresenceStore
  /** Counted in this process's memory: reset on restart. */
  rateWindows: RateWindows
  close(): Promise<void>
}

export type SharedState = RedisState | InProcessState

export async function createSharedState(config: Config, log: Log): Promise<SharedState> {
  if (isSingleProcess(config)) {
    return {
      kind: 'in-process',
      events: createLocalPublisher(log),
      presence: new MemoryPresenceStore({ gatewayId: randomUUID(), entryTtlMs: presenceTimings(config).entryTtlMs }),
      rateWindows: createRateWindows(config, null, log),
      close: async () => {},
    }
  }
  const redis = createRedis(config, log)
  try {
    await waitReady(redis, 10_000)
  } catch (err) {
    await closeRedis(redis)
    throw err
  }
  return {
    kind: 'redis',
    redis,
    events: createPublisher(redis, config.REDIS_PREFIX, log),
    presence: redisPresenceReader(redis, presencePrefix(config)),
    rateWindows: createRateWindows(config, redis, log),
    close: () => closeRedis(redis),
  }
}
