import { STATUS_CODES } from 'node:http'

/**
 * The one error type domain code throws. The error handler (plugins/errors.ts) turns it into
 * the contract's body: { statusCode, error, code, message }.
 */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'AppError'
  }
}

export interface ErrorBody {
  statusCode: number
  error: string
  code: string
  message: string
}

export function errorBody(statusCode: number, code: string, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', code, message }
}

export const badRequest = (message: string, code = 'VALIDATION_ERROR') => new AppError(400, code, message)
export const unauthorized = (message = 'Authentication required', code = 'UNAUTHENTICATED') =>
  new AppError(401, code, message)
export const forbidden = (message = 'Not allowed', code = 'FORBIDDEN') => new AppError(403, code, message)
export const notFound = (code: string, message: string) => new AppError(404, code, message)
export const conflict = (code: string, message: string) => new AppError(409, code, message)
export const conversationNotFound = () => notFound('CONVERSATION_NOT_FOUND', 'Conversation not found')

/**
 * Errors Fastify's router raises before any route, hook or error handler runs (Fastify's
 * `frameworkErrors` option): a path segment that is not valid percent-encoding, or one longer than
 * the router's maxParamLength. Fastify's own answer has another body (and echoes the path).
 */
export function routerError(err: { code?: string }): AppError {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return new AppError(414, 'URI_TOO_LONG', 'A path segment is too long')
  if (err.code === 'FST_ERR_BAD_URL') return new AppError(400, 'BAD_URL', 'The path is not valid percent-encoded text')
  return new AppError(400, 'BAD_REQUEST', 'The request could not be routed')
}
