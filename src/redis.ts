import { Redis } from 'ioredis'
import type { Config } from './config.js'
import type { Log } from './logger.js'

/**
 * The API's Redis client for commands (rate limits, presence reads, event publishing). Later
 * outages fail commands at once instead of queueing them, so /health answers 503 quickly and a
 * request never hangs on Redis; ioredis reconnects by itself and the next probe is 200 again.
 */
export function createRedis(config: Config, log: Log): Redis {
  const client = new Redis(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  })
  client.on('error', (err: Error) => log.warn({ err: { message: err.message } }, 'redis error'))
  return client
}

/** Resolves when the client is connected; rejects after `timeoutMs` (start-up needs Redis). */
export function waitReady(client: Redis, timeoutMs: number): Promise<void> {
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
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect())
  else client.disconnect()
}
