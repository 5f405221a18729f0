import fastifyRedis from '@fastify/redis'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'

/**
 * One ioredis client for commands (rate limits, presence reads, event publishing). Start-up
 * waits for Redis (a pod without it is not ready). Later outages fail commands at once instead
 * of queueing them, so /health answers 503 quickly and a request never hangs on Redis; ioredis
 * reconnects by itself and the next probe is 200 again.
 */
export default fp(
  async (app) => {
    const client = new Redis(app.config.REDIS_URL, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      retryStrategy: (times: number) => Math.min(times * 100, 1000),
    })
    client.on('error', (err: Error) => app.log.warn({ err: { message: err.message } }, 'redis error'))
    await app.register(fastifyRedis, { client, closeClient: false })
    app.addHook('onClose', async () => {
      // quit() needs a live connection; during an outage just drop the socket.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect())
      else client.disconnect()
    })
  },
  { name: 'redis', dependencies: ['config'] },
)
