import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import autoload from '@fastify/autoload'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyReply, type FastifyServerOptions } from 'fastify'
import { trustProxy } from './config.js'
import { errorBody, routerError } from './errors.js'
import { loggerOptions } from './logger.js'
import { serializerWithNativeNullable } from './serialization.js'
import { validatorPerHttpPart } from './validation.js'
import authPlugin from '../plugins/auth.js'
import compressPlugin from '../plugins/compress.js'
import configPlugin from '../plugins/config.js'
import corsPlugin from '../plugins/cors.js'
import depsPlugin from '../plugins/deps.js'
import docsPlugin from '../plugins/docs.js'
import errorsPlugin from '../plugins/errors.js'
import gatewayPlugin from '../plugins/gateway.js'
import inputPlugin from '../plugins/input.js'
import jwtPlugin from '../plugins/jwt.js'
import rateLimitPlugin from '../plugins/rate-limit.js'
import requestLogPlugin from '../plugins/request-log.js'
import sensiblePlugin from '../plugins/sensible.js'

// Route folders are .ts under tsx (dev, tests) and .js in the compiled build: tell autoload.
if (import.meta.url.endsWith('.ts')) process.env.FASTIFY_AUTOLOAD_TYPESCRIPT = '1'

export interface BuildOptions {
  /** The environment to read configuration from (default: process.env). */
  env?: NodeJS.ProcessEnv
  /** Overrides the pino logger options (tests pass a stream to read the log). */
  logger?: FastifyServerOptions['logger']
}

export async function buildApp(opts: BuildOptions = {}) {
  const env = opts.env ?? process.env
  const app = Fastify({
    logger: opts.logger ?? loggerOptions(env.LOG_LEVEL ?? 'info'),
    // One line per request, written by plugins/request-log.ts.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    bodyLimit: 1024 * 1024,
    trustProxy: trustProxy(env.TRUST_PROXY), // validated with the rest by the config plugin
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // The router's own refusals (malformed or too long path segments) in the contract's body.
    frameworkErrors: (err, request, reply: FastifyReply) => {
      const e = routerError(err)
      reply.code(e.statusCode).header('x-request-id', request.id).send(errorBody(e.statusCode, e.code, e.message))
    },
    ajv: {
      customOptions: {
        removeAdditional: false, // unknown body fields are a 400, never silently dropped
        useDefaults: true,
        allErrors: false,
      },
    },
    // Type coercion for query strings, params and headers only; bodies are never coerced.
    // Responses: nullable fields serialized without Ajv (src/serialization.ts).
    schemaController: { compilersFactory: { buildValidator: validatorPerHttpPart(), buildSerializer: serializerWithNativeNullable() } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Infrastructure, in dependency order. Each plugin only wires; rules live in src/.
  await app.register(configPlugin, { env })
  await app.register(requestLogPlugin)
  await app.register(errorsPlugin)
  await app.register(inputPlugin)
  await app.register(jwtPlugin)
  await app.register(depsPlugin)
  await app.register(gatewayPlugin)
  await app.register(rateLimitPlugin)
  await app.register(authPlugin)
  await app.register(corsPlugin)
  await app.register(compressPlugin)
  await app.register(sensiblePlugin)
  await app.register(docsPlugin)

  // routes/<a>/<b>/*.ts serves /<a>/<b>/...
  await app.register(autoload, {
    dir: fileURLToPath(new URL('../routes', import.meta.url)),
    dirNameRoutePrefix: true,
    // Every file in a folder serves the folder's prefix. Autoload's default would load only
    // index.ts when a folder has one, silently dropping its siblings.
    indexPattern: /(?!)/,
    ignorePattern: /\.(test|spec)\./,
  })
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
