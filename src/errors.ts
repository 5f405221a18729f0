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
export const guestNotFound = () => notFound('GUEST_NOT_FOUND', 'Guest not found')
