import { Cluster, Redis, type RedisOptions } from 'ioredis'
import type { Config } from './config.js'
import type { Log } from './logger.js'

/** A Redis server or a Redis Cluster (`REDIS_URL=redis-cluster://host:port,host:port`): the same commands. */
export type RedisClient = Redis | Cluster

const CLUSTER_SCHEME = 'redis-cluster://'
export const isClusterUrl = (url: string) => url.startsWith(CLUSTER_SCHEME)

/**
 * The prefix of presence's keys. Its Lua scripts and pipelines touch a workspace's keys together
 * with the process-wide indexes (src/presence.ts), so on a cluster they all carry one hash tag,
 * REDIS_PREFIX itself (unless it holds one already): one slot, hence one primary, holds presence
 * (small: a few keys per online member and visitor). Rate-limit counters are one key per script
 * and keep the plain prefix, spread over every primary.
 */
export function presencePrefix(config: Pick<Config, 'REDIS_URL' | 'REDIS_PREFIX'>): string {
  const prefix = config.REDIS_PREFIX
  return isClusterUrl(config.REDIS_URL) && !/\{[^}]+\}/.test(prefix) ? `{${prefix}}` : prefix
}

/**
 * A client for REDIS_URL. A cluster URL lists seed nodes (any reachable one is enough; the client
 * learns the rest and follows failovers: a command to a failed primary fails, the slots are
 * refreshed, and the promoted replica takes the next one). Keys carry one hash tag
 * (presencePrefix), so every multi-key script and pipeline stays in one slot.
 */
export function redisClient(url: string, options: RedisOptions): RedisClient {
  if (!isClusterUrl(url)) return new Redis(url, options)
  const nodes = url.slice(CLUSTER_SCHEME.length).split(',').map((hp) => {
    const [host, port] = hp.trim().split(':')
    return { host: host!, port: Number(port ?? 6379) }
  })
  const { enableOfflineQueue, retryStrategy, ...redisOptions } = options
  return new Cluster(nodes, {
    redisOptions,
    enableOfflineQueue: enableOfflineQueue ?? true,
    clusterRetryStrategy: retryStrategy ?? ((times: number) => Math.min(times * 100, 1000)),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    slotsRefreshTimeout: 2000,
    slotsRefreshInterval: 5000,
  })
}

/**
 * The API's Redis client for commands (rate limits, presence reads, event publishing). Later
 * outages fail commands at once instead of queueing them, so /health answers 503 quickly and a
 * request never hangs on Redis; ioredis reconnects by itself and the next probe is 200 again.
 */
export function createRedis(config: Config, log: Log): RedisClient {
  const client = redisClient(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  })
  client.on('error', (err: Error) => log.warn({ err: { message: err.message } }, 'redis error'))
  return client
}

/** Resolves when the client is connected; rejects after `timeoutMs` (start-up needs Redis). */
export function waitReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve()
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup()
      reject(new Error(`Redis did not answer within ${timeoutMs} ms`))
    }, timeoutMs)
    const onReady = () => {
      cleanup()
      resolve()
    }
    const cleanup = () => {
      clearTimeout(timer)
      client.off('ready', onReady)
    }
    client.on('ready', onReady)
  })
}

/** quit() needs a live connection; during an outage just drop the socket. */
export async function closeRedis(client: RedisClient): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect())
  else client.disconnect()
}
