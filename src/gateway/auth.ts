import { createDecoder } from 'fast-jwt'
import type { Socket } from 'socket.io'
import { membership, verifyMemberToken, verifyVisitorSession } from '../auth/callers.js'
import type { Deps } from '../context.js'
import type { Log } from '../logger.js'
import { AppError } from '../errors.js'

/** Who a socket is, fixed at the handshake (socket.data). */
export type SocketPrincipal =
  | { kind: 'member'; workspaceId: string; userId: string; expiresAt?: number }
  | { kind: 'visitor'; guestId: string; channelId: string; workspaceId: string; epoch: number; expiresAt?: number }

/**
 * The reasons the contract names, and IDP_UNAVAILABLE when the member token could not be checked
 * because the identity provider's keys could not be fetched (a retry later may succeed; the
 * token is not known to be bad), and RATE_LIMITED over the visitor connection limits (src/gateway/limits.ts).
 * The client reads them as `connect_error`'s message.
 */
export type RefusalReason = 'UNAUTHENTICATED' | 'NOT_A_MEMBER' | 'IDP_UNAVAILABLE' | 'SESSION_REVOKED' | 'RATE_LIMITED'

export class HandshakeError extends Error {
  data: { code: string; message: string; retryAfter?: number }
  constructor(reason: RefusalReason, code: string, message: string, extra: { retryAfter?: number } = {}) {
    super(reason)
    this.data = { code, message, ...extra }
  }
}

const decode = createDecoder()

function expiryOf(token: string): number | undefined {
  try {
    const exp = (decode(token) as { exp?: unknown }).exp
    return typeof exp === 'number' ? exp * 1000 : undefined
  } catch {
    return undefined
  }
}

/**
 * Checks the handshake's `auth` payload by the API's own rules (src/auth/callers.ts: the same
 * token verifiers and membership lookup). A member token wins when both kinds are sent, as on
 * HTTP; a refusal keeps the API's code and message.
 */
export async function authenticate(
  auth: unknown,
  deps: Pick<Deps, 'memberTokens' | 'visitorTokens' | 'memberDirectory' | 'channelSessions'>,
  log: Log,
): Promise<SocketPrincipal> {
  const payload = (auth && typeof auth === 'object' ? auth : {}) as Record<string, unknown>
  const { token, workspaceId, visitorSession } = payload
  try {
    if (typeof token === 'string' && token !== '') {
      const user = await verifyMemberToken(deps, log, token)
      if (typeof workspaceId !== 'string' || workspaceId === '') {
        throw new HandshakeError('UNAUTHENTICATED', 'WORKSPACE_REQUIRED', 'workspaceId is required with a member token')
      }
      const member = await membership(deps, user, workspaceId, 'any')
      return { kind: 'member', workspaceId: member.workspaceId, userId: member.userId, expiresAt: expiryOf(token) }
    }
    if (typeof visitorSession === 'string' && visitorSession !== '') {
      const visitor = await verifyVisitorSession(deps, log, visitorSession)
      // The epoch lets the heartbeat disconnect the socket once the channel revokes its sessions.
      const { epoch } = deps.visitorTokens.verify(visitorSession)
      return { kind: 'visitor', guestId: visitor.guestId, channelId: visitor.channelId, workspaceId: visitor.workspaceId, epoch, expiresAt: expiryOf(visitorSession) }
    }
  } catch (err) {
    if (err instanceof AppError && err.code === 'SESSION_REVOKED') throw new HandshakeError('SESSION_REVOKED', err.code, err.message)
    if (err instanceof AppError && err.statusCode === 401) throw new HandshakeError('UNAUTHENTICATED', err.code, err.message)
    if (err instanceof AppError && err.statusCode === 403) throw new HandshakeError('NOT_A_MEMBER', err.code, err.message)
    if (err instanceof AppError && err.code === 'IDP_UNAVAILABLE') throw new HandshakeError('IDP_UNAVAILABLE', err.code, err.message)
    throw err
  }
  throw new HandshakeError('UNAUTHENTICATED', 'UNAUTHENTICATED', 'Credentials required: { token, workspaceId } or { visitorSession }')
}

export function principalOf(socket: Socket): SocketPrincipal {
  return socket.data as SocketPrincipal
}
