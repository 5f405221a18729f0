import type { FastifyError } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, errorBody } from '../src/errors.js'
import { describeValidationError } from '../src/validation.js'

/** Fastify's own error codes that are the client's fault, with the contract's code for each. */
const CLIENT_ERRORS: Record<string, { status: number; code: string; message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'BAD_REQUEST', message: 'Invalid Content-Length' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'Request body is larger than 1 MiB' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'INVALID_JSON', message: 'Body is not valid JSON' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'INVALID_JSON', message: 'Body is not valid JSON' },
}

/**
 * The one error handler: every 4xx and 5xx leaves as { statusCode, error, code, message }.
 * 5xx bodies never carry the cause; the log does. Unknown routes get the same body.
 */
export default fp(
  async (app) => {
    app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
      if (err instanceof AppError) {
        if (err.statusCode >= 500) request.log.error({ err }, err.message)
        return reply.code(err.statusCode).headers(err.headers).send(errorBody(err.statusCode, err.code, err.message))
      }
      const fe = err as FastifyError
      if (fe.validation) {
        return reply.code(400).send(errorBody(400, 'VALIDATION_ERROR', describeValidationError(fe)))
      }
      const known = fe.code ? CLIENT_ERRORS[fe.code] : undefined
      if (known) return reply.code(known.status).send(errorBody(known.status, known.code, known.message ?? fe.message))
      if (fe instanceof SyntaxError || (fe.statusCode === 400 && /JSON/i.test(fe.message))) {
        return reply.code(400).send(errorBody(400, 'INVALID_JSON', 'Body is not valid JSON'))
      }
      const status = fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500
      if (status < 500) {
        const body = errorBody(status, '', fe.message)
        body.code = body.error.toUpperCase().replace(/[^A-Z0-9]+/g, '_')
        return reply.code(status).send(body)
      }
      request.log.error({ err }, 'unhandled error')
      return reply.code(500).send(errorBody(500, 'INTERNAL_ERROR', 'Internal Server Error'))
    })

    app.setNotFoundHandler((request, reply) => {
      reply.code(404).send(errorBody(404, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`))
    })

  },
  { name: 'errors' },
)
