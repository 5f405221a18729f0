import { createDecoder } from 'fast-jwt'
import type { Socket } from 'socket.io'
import { membership, verifyMemberToken, verifyVisitorSession } from '../auth/callers.js'
import type { Deps } from '../context.js'
import type { Log } from '../logger.js'
import { handshakeCredentialsRequired, handshakeRefusalOf, handshakeWorkspaceRequired } from '../errors.js'

/** Who a socket is, fixed at the handshake (socket.data). */
export type SocketPrincipal =
  | { kind: 'member'; workspaceId: string; userId: string; expiresAt?: number }
  | { kind: 'visitor'; guestId: string; channelId: string; workspaceId: string; epoch: number; expiresAt?: number }

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
        throw handshakeWorkspaceRequired()
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
    throw handshakeRefusalOf(err) ?? err
  }
  throw handshakeCredentialsRequired()
}

export function principalOf(socket: Socket): SocketPrincipal {
  return socket.data as SocketPrincipal
}
