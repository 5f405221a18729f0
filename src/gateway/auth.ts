import { createDecoder } from 'fast-jwt'
import type { Logger } from 'pino'
import type { Socket } from 'socket.io'
import type { MemberDirectory } from '../auth/members.js'
import { IdpUnavailableError, type MemberVerifier, type VisitorTokens } from '../auth/tokens.js'

/** Who a socket is, fixed at the handshake (socket.data). */
export type SocketPrincipal =
  | { kind: 'member'; workspaceId: string; userId: string; expiresAt?: number }
  | { kind: 'visitor'; guestId: string; channelId: string; workspaceId: string; expiresAt?: number }

/**
 * The reasons the contract names, and IDP_UNAVAILABLE when the member token could not be checked
 * because the identity provider's keys could not be fetched (a retry later may succeed; the
 * token is not known to be bad). The client reads them as `connect_error`'s message.
 */
export type RefusalReason = 'UNAUTHENTICATED' | 'NOT_A_MEMBER' | 'IDP_UNAVAILABLE'

export class HandshakeError extends Error {
  data: { code: string; message: string }
  constructor(reason: RefusalReason, code: string, message: string) {
    super(reason)
    this.data = { code, message }
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
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
 * Checks the handshake's `auth` payload exactly as the API checks headers: the same verifiers
 * (src/auth/tokens.ts) and the same membership lookup (MemberDirectory). A member token wins
 * when both kinds are sent, as on HTTP.
 */
export async function authenticate(
  auth: unknown,
  deps: { memberTokens: MemberVerifier; visitorTokens: VisitorTokens; directory: MemberDirectory; log: Logger },
): Promise<SocketPrincipal> {
  const payload = (auth && typeof auth === 'object' ? auth : {}) as Record<string, unknown>
  const { token, workspaceId, visitorSession } = payload
  if (typeof token === 'string' && token !== '') {
    let sub: string
    try {
      sub = (await deps.memberTokens(token)).sub
    } catch (err) {
      if (err instanceof IdpUnavailableError) {
        deps.log.warn({ reason: err.message }, 'socket member token not checked: identity provider unavailable')
        throw new HandshakeError('IDP_UNAVAILABLE', 'IDP_UNAVAILABLE', 'The identity provider is unavailable; retry later')
      }
      deps.log.info({ reason: (err as Error).message }, 'socket member token refused')
      throw new HandshakeError('UNAUTHENTICATED', 'UNAUTHENTICATED', 'Invalid or expired token')
    }
    if (typeof workspaceId !== 'string' || workspaceId === '') {
      throw new HandshakeError('UNAUTHENTICATED', 'WORKSPACE_REQUIRED', 'workspaceId is required with a member token')
    }
    if (!UUID.test(workspaceId)) throw new HandshakeError('NOT_A_MEMBER', 'NOT_A_MEMBER', 'Not a member of this workspace')
    const record = await deps.directory.get(workspaceId.toLowerCase(), sub)
    if (!record) throw new HandshakeError('NOT_A_MEMBER', 'NOT_A_MEMBER', 'Not a member of this workspace')
    if (record.status !== 'active') throw new HandshakeError('NOT_A_MEMBER', 'MEMBER_DISABLED', 'Membership is disabled')
    return { kind: 'member', workspaceId: record.workspaceId, userId: sub, expiresAt: expiryOf(token) }
  }
  if (typeof visitorSession === 'string' && visitorSession !== '') {
    try {
      const c = deps.visitorTokens.verify(visitorSession)
      return { kind: 'visitor', guestId: c.guestId, channelId: c.channelId, workspaceId: c.workspaceId, expiresAt: c.exp * 1000 }
    } catch (err) {
      deps.log.info({ reason: (err as Error).message }, 'socket visitor session refused')
      throw new HandshakeError('UNAUTHENTICATED', 'UNAUTHENTICATED', 'Invalid or expired visitor session')
    }
  }
  throw new HandshakeError('UNAUTHENTICATED', 'UNAUTHENTICATED', 'Credentials required: { token, workspaceId } or { visitorSession }')
}

export function principalOf(socket: Socket): SocketPrincipal {
  return socket.data as SocketPrincipal
}
