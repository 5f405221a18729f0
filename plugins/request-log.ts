import fp from 'fastify-plugin'

/**
 * Every answer carries its request id (`x-request-id`: the caller's, else a generated UUID, see
 * the server options in src/app.ts), and every request writes one log line when it completes
 * (Fastify's own request logging is off).
 */
export default fp(
  async (app) => {
    app.addHook('onSend', async (request, reply) => {
      reply.header('x-request-id', request.id)
    })

    app.addHook('onResponse', async (request, reply) => {
      request.log.info(
        { req: request, statusCode: reply.statusCode, durationMs: Math.round(reply.elapsedTime * 100) / 100 },
        'request completed',
      )
    })
  },
  { name: 'request-log' },
)
