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

/*
 * Every error factory of Parley is here: domain code, plugins and routes throw these (or the
 * generic ones with a contract code), never `new AppError` of their own.
 */

export const badRequest = (message: string, code = 'VALIDATION_ERROR') => new AppError(400, code, message)
export const unauthorized = (message = 'Authentication required', code = 'UNAUTHENTICATED') =>
  new AppError(401, code, message)
export const forbidden = (message = 'Not allowed', code = 'FORBIDDEN') => new AppError(403, code, message)
export const notFound = (code: string, message: string) => new AppError(404, code, message)
export const conflict = (code: string, message: string) => new AppError(409, code, message)
/** 429 with Retry-After: a time-window limit (plugins/rate-limit.ts) or a quota on rows (transcripts). */
export const rateLimited = (retryAfterS: number, message = `Too many requests, retry in ${retryAfterS} s`) =>
  new AppError(429, 'RATE_LIMITED', message, { 'retry-after': String(retryAfterS) })
/** A bug in Parley itself (a route declared for other callers than its domain function serves). */
export const internalError = (message: string) => new AppError(500, 'INTERNAL_ERROR', message)
/** A dependency (database, provider API) cannot answer now: the sender retries. */
export const dependencyUnavailable = (message: string) => new AppError(503, 'DEPENDENCY_UNAVAILABLE', message, { 'retry-after': '30' })
export const notConfigured = (message: string) => new AppError(503, 'NOT_CONFIGURED', message)

export const invalidCursor = () => badRequest('Invalid cursor', 'INVALID_CURSOR')
/** GET /media/:id?variant=thumb of a file that has none (not an image, too large, unreadable). */
export const noThumbnail = (message = 'This file has no thumbnail') => badRequest(message, 'NO_THUMBNAIL')
/** A NUL character in any field (found by findNul, src/validation.ts): PostgreSQL text cannot store it. */
export const nulInField = (path: string) => badRequest(`field '${path}' must not contain NUL characters`)
/** The member token could not be checked: the identity provider's keys could not be fetched in time. */
export const idpUnavailable = () => new AppError(503, 'IDP_UNAVAILABLE', 'The identity provider is unavailable; retry later', { 'retry-after': '5' })
/** A visitor session of a channel that was deactivated since it was signed (API.md section 5). */
export const sessionRevoked = () => unauthorized('This visitor session was revoked: its channel was deactivated', 'SESSION_REVOKED')
/** The guest already has VISITOR_OPEN_CONVERSATIONS_MAX open conversations. */
export const tooManyOpenConversations = (max: number) =>
  conflict('TOO_MANY_OPEN_CONVERSATIONS', `A guest may have at most ${max} open conversations`)
export const conversationNotFound = () => notFound('CONVERSATION_NOT_FOUND', 'Conversation not found')
export const guestNotFound = (message = 'Guest not found') => notFound('GUEST_NOT_FOUND', message)
/** A transcript for a guest without an address, and no address named. */
export const emailRequired = () => badRequest("field 'email' is required: the guest has no e-mail address", 'EMAIL_REQUIRED')
export const csatNotOpen = () => conflict('CSAT_NOT_OPEN', 'Ratings open once the conversation is resolved, on channels with csatEnabled')
export const csatClosed = () => conflict('CSAT_CLOSED', 'The rating can no longer be changed (14 days after the first)')
export const csatNotFound = () => notFound('CSAT_NOT_FOUND', 'No rating for this conversation')
export const channelNotFound = () => notFound('CHANNEL_NOT_FOUND', 'Channel not found')
export const memberNotFound = () => notFound('MEMBER_NOT_FOUND', 'Member not found')
export const cannedNotFound = () => notFound('CANNED_RESPONSE_NOT_FOUND', 'Canned response not found')
export const shortcutTaken = () => conflict('SHORTCUT_TAKEN', 'This shortcut is already taken')
export const invalidChannel = () => badRequest('channelIds names a channel that is not one of this workspace', 'INVALID_CHANNEL')
export const mentionNotFound = () => notFound('MENTION_NOT_FOUND', 'Mention not found')
export const invalidMention = (message = 'mentions names someone who is not an active member of this workspace') =>
  badRequest(message, 'INVALID_MENTION')
/** 403s of resolving a member caller (src/auth/callers.ts) and of member administration. */
export const notAMember = () => forbidden('Not a member of this workspace', 'NOT_A_MEMBER')
export const memberDisabled = () => forbidden('Membership is disabled', 'MEMBER_DISABLED')
export const missingPermission = (permission: string) => forbidden(`Missing permission ${permission}`, 'FORBIDDEN')
export const workspaceRequired = () => badRequest('x-workspace-id header is required', 'WORKSPACE_REQUIRED')
export const memberExists = () => conflict('MEMBER_EXISTS', 'A member with this userId already exists in this workspace')
/** POST /auth and the widget's configuration (API.md section 5). */
export const originNotAllowed = () => forbidden('This origin may not use the channel', 'ORIGIN_NOT_ALLOWED')
export const invalidChannelToken = () => unauthorized('A valid x-channel-token is required for this channel', 'INVALID_CHANNEL_TOKEN')
export const invalidIdentityHash = () => unauthorized('identityHash does not match the e-mail', 'INVALID_IDENTITY_HASH')
export const invalidVisitorSession = () => unauthorized('Invalid visitor session', 'INVALID_VISITOR_SESSION')
export const invalidAgent = () => badRequest('agentId is not an active member of this workspace', 'INVALID_AGENT')
export const idempotencyKeyReused = () => conflict('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for another address')
export const lastOwner = () => conflict('LAST_OWNER', 'The workspace must keep at least one active owner')
export const ownerOnly = (what: string) => forbidden(`Only an owner may ${what}`, 'FORBIDDEN')
/** A verified billing event whose content cannot be mapped: 400, not recorded, so a fix plus the provider's retry processes it. */
export const invalidPayload = (message: string) => badRequest(message, 'INVALID_PAYLOAD')
export const invalidSignature = () => badRequest('Webhook signature verification failed', 'INVALID_SIGNATURE')
/** The development demo (GET /demo) in production: as absent as any unknown route. */
export const demoUnavailable = () => notFound('NOT_FOUND', 'The demo is not served in production')

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

/** A body that is not JSON (or an empty body declared as JSON). */
export const invalidJson = () => badRequest('Body is not valid JSON', 'INVALID_JSON')
/** A path the standalone gateway's HTTP server does not serve (only /health and Socket.IO's). */
export const pathNotFound = () => notFound('NOT_FOUND', 'Not found')
/** No route for this method and path (Fastify's not-found handler). */
export const routeNotFound = (method: string, path: string) => notFound('NOT_FOUND', `Route ${method} ${path} not found`)

/** Fastify's own errors that are the client's fault, as the contract answers them (plugins/errors.ts). */
const FASTIFY_CLIENT_ERRORS: Record<string, () => AppError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => unsupportedMediaType('Content-Type must be application/json'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => badRequest('Invalid Content-Length', 'BAD_REQUEST'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body is larger than 1 MiB'),
  FST_ERR_CTP_EMPTY_JSON_BODY: invalidJson,
  FST_ERR_CTP_INVALID_JSON_BODY: invalidJson,
}
export function fastifyClientError(err: { code?: string }): AppError | undefined {
  return err.code && Object.hasOwn(FASTIFY_CLIENT_ERRORS, err.code) ? FASTIFY_CLIENT_ERRORS[err.code]!() : undefined
}

// Teams and routing (docs/routing.md)
export const teamNotFound = () => notFound('TEAM_NOT_FOUND', 'Team not found')
export const teamNameTaken = () => conflict('TEAM_NAME_TAKEN', 'A team of this workspace already has this name')
export const tooManyTeams = (max: number) => conflict('TOO_MANY_TEAMS', `A workspace holds at most ${max} teams`)
export const invalidTeam = (field = 'teamId') => badRequest(`${field} is not a team of this workspace`, 'INVALID_TEAM')

// Attachments (docs/attachments.md)
export const attachmentNotFound = () => notFound('ATTACHMENT_NOT_FOUND', 'Attachment not found')
export const uploadTooLarge = (max: number) => new AppError(413, 'PAYLOAD_TOO_LARGE', `The file is larger than ${max} bytes`)
export const unsupportedMediaType = (message = 'This type of file is not accepted') => new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', message)
export const invalidAttachment = (message = 'attachmentIds must name pending uploads of this conversation by the same sender') =>
  badRequest(message, 'INVALID_ATTACHMENT')
/** The object store cannot be reached: nothing was kept; the client retries. */
export const storageUnavailable = () => new AppError(503, 'STORAGE_UNAVAILABLE', 'File storage is unavailable; retry later', { 'retry-after': '5' })
export const rangeNotSatisfiable = (size: number) =>
  new AppError(416, 'RANGE_NOT_SATISFIABLE', 'The requested range is outside the file', { 'content-range': `bytes */${size}` })
/** A multipart upload that is not what POST /uploads takes (field order, missing file). */
export const malformedUpload = (message: string) => badRequest(message, 'VALIDATION_ERROR')

// Triage (API.md section 17, docs/triage.md)
export const slaPolicyNotFound = () => notFound('SLA_POLICY_NOT_FOUND', 'SLA policy not found')
export const invalidSlaPolicy = () => badRequest('policyId is not an SLA policy of this workspace', 'INVALID_SLA_POLICY')
export const labelNotFound = () => notFound('LABEL_NOT_FOUND', 'Label not found')
export const labelNameTaken = () => conflict('LABEL_NAME_TAKEN', 'A label with this name already exists')
export const tooManyLabels = (max: number) => conflict('TOO_MANY_LABELS', `A workspace may have at most ${max} labels`)
export const invalidLabel = (message = 'labelIds must name at most 20 distinct labels of this workspace') => badRequest(message, 'INVALID_LABEL')
export const viewNotFound = () => notFound('VIEW_NOT_FOUND', 'View not found')
export const tooManyViews = (message: string) => conflict('TOO_MANY_VIEWS', message)
/** A snooze time in the past or more than 366 days ahead. */
export const invalidSnooze = () => badRequest("field 'until' must be a future date-time at most 366 days ahead")

// The gateway's socket protocol (API.md section 2): not HTTP errors, but its codes are minted here too.

/**
 * Why a socket's handshake was refused: the reasons the contract names, and IDP_UNAVAILABLE when
 * the member token could not be checked because the identity provider's keys could not be fetched
 * (a retry later may succeed; the token is not known to be bad), and RATE_LIMITED over the visitor
 * connection limits (src/gateway/limits.ts). The client reads it as `connect_error`'s message.
 */
export type RefusalReason = 'UNAUTHENTICATED' | 'NOT_A_MEMBER' | 'IDP_UNAVAILABLE' | 'SESSION_REVOKED' | 'RATE_LIMITED'

/** A refused handshake: Socket.IO sends the client its message (the reason) and `data`. */
export class HandshakeError extends Error {
  data: { code: string; message: string; retryAfter?: number }
  constructor(reason: RefusalReason, code: string, message: string, extra: { retryAfter?: number } = {}) {
    super(reason)
    this.data = { code, message, ...extra }
  }
}

/**
 * The handshake's refusal for an error of the API's own caller checks (src/auth/callers.ts),
 * keeping its code and message; undefined for any other error (a fault, not a refusal).
 */
export function handshakeRefusalOf(err: unknown): HandshakeError | undefined {
  if (!(err instanceof AppError)) return undefined
  if (err.code === 'SESSION_REVOKED') return new HandshakeError('SESSION_REVOKED', err.code, err.message)
  if (err.statusCode === 401) return new HandshakeError('UNAUTHENTICATED', err.code, err.message)
  if (err.statusCode === 403) return new HandshakeError('NOT_A_MEMBER', err.code, err.message)
  if (err.code === 'IDP_UNAVAILABLE') return new HandshakeError('IDP_UNAVAILABLE', err.code, err.message)
  return undefined
}
export const handshakeWorkspaceRequired = () =>
  new HandshakeError('UNAUTHENTICATED', 'WORKSPACE_REQUIRED', 'workspaceId is required with a member token')
export const handshakeCredentialsRequired = () =>
  new HandshakeError('UNAUTHENTICATED', 'UNAUTHENTICATED', 'Credentials required: { token, workspaceId } or { visitorSession }')
/** Over a visitor connection limit (src/gateway/limits.ts). */
export const handshakeRateLimited = (retryAfter: number) =>
  new HandshakeError('RATE_LIMITED', 'RATE_LIMITED', `Too many connections, retry in ${retryAfter} s`, { retryAfter })
/** The handshake failed on Parley's side (not a refusal): the client retries. */
export function handshakeInternalError(): Error & { data: { code: string; message: string } } {
  return Object.assign(new Error('INTERNAL_ERROR'), { data: { code: 'INTERNAL_ERROR', message: 'Could not check the credentials; retry' } })
}

/** A socket event's refused acknowledgement (`{ ok: false, code, message }`). */
export const ackRateLimited = (event: string) => ({ ok: false, code: 'RATE_LIMITED', message: `Too many ${event} calls; retry later` })
export const ackInvalidPresence = () => ({ ok: false, code: 'VALIDATION_ERROR', message: "presence:set takes { status: 'online' | 'away' }" })
export const ackPresenceUnavailable = () => ({ ok: false, code: 'UNAVAILABLE', message: 'Presence could not be updated; retry' })
