import type { FastifyError, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, badRequest, errorBody, fastifyClientError, internalError, invalidJson, routeNotFound } from '../src/errors.js'
import { describeValidationError } from '../src/validation.js'

/**
 * The one error handler: every 4xx and 5xx leaves as { statusCode, error, code, message }.
 * 5xx bodies never carry the cause; the log does. Unknown routes get the same body.
 */
export default fp(
  async (app) => {
    const send = (reply: FastifyReply, e: AppError) => reply.code(e.statusCode).headers(e.headers).send(errorBody(e.statusCode, e.code, e.message))
    app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
      if (err instanceof AppError) {
        if (err.statusCode >= 500) request.log.error({ err }, err.message)
        return send(reply, err)
      }
      const fe = err as FastifyError
      if (fe.validation) {
        return send(reply, badRequest(describeValidationError(fe)))
      }
      const known = fastifyClientError(fe)
      if (known) return send(reply, known)
      if (fe instanceof SyntaxError || (fe.statusCode === 400 && /JSON/i.test(fe.message))) {
        return send(reply, invalidJson())
      }
      const status = fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500
      if (status < 500) {
        const body = errorBody(status, '', fe.message)
        body.code = body.error.toUpperCase().replace(/[^A-Z0-9]+/g, '_')
        return reply.code(status).send(body)
      }
      request.log.error({ err }, 'unhandled error')
      return send(reply, internalError('Internal Server Error'))
    })

    app.setNotFoundHandler((request, reply) => {
      send(reply, routeNotFound(request.method, request.url.split('?')[0]!))
    })

  },
  { name: 'errors' },
)
