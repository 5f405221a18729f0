import fp from 'fastify-plugin'
import { createPublisher, type EventPublisher } from '../src/events.js'

declare module 'fastify' {
  interface FastifyInstance {
    events: EventPublisher
  }
}

export default fp(
  async (app) => {
    app.decorate('events', createPublisher(app.redis, app.config.REDIS_PREFIX, app.log))
  },
  { name: 'events', dependencies: ['redis'] },
)
