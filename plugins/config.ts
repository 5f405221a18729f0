import fastifyEnv from '@fastify/env'
import fp from 'fastify-plugin'
import { checkConfig, ConfigSchema, describeConfigError, type Config } from '../src/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/** Validates the environment once, at start, and decorates `app.config`. */
export default fp<{ env: NodeJS.ProcessEnv }>(
  async (app, opts) => {
    try {
      await app.register(fastifyEnv, { schema: structuredClone(ConfigSchema), data: opts.env, env: false, dotenv: false })
      await app.after()
      checkConfig(app.config)
    } catch (err) {
      throw new Error(describeConfigError(err))
    }
  },
  { name: 'config' },
)
