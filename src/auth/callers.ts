import { isMediaTokenForm } from '../attachments/links.js'
import type { Deps } from '../context.js'
import type { Log } from '../logger.js'
import type { Role } from '../db/schema.js'
import { idpUnavailable, memberDisabled, missingPermission, notAMember, sessionRevoked, unauthorized, workspaceRequired } from '../errors.js'
import { isUuid } from '../uuid.js'
import { can, type Permission } from './permissions.js'
import { IdpUnavailableError } from './tokens.js'

/**
 * Who is calling, resolved once from the request's credentials (plugins/auth.ts) or set by the
 * process itself (jobs), and carried by the context (src/context.ts) into domain code.
 */
export type Caller = MemberCaller | VisitorCaller | UserCaller | AnonymousCaller | SystemCaller

/** An active member of `workspaceId` (member token + x-workspace-id). */
export interface MemberCaller {
  kind: 'member'
  workspaceId: string
  userId: string
  role: Role
  name: string
  email: string
}

/** A widget's visitor session: one guest on one channel. */
export interface VisitorCaller {
  kind: 'visitor'
  workspaceId: string
  guestId: string
  channelId: string
}

/** A valid member token on a route that names no workspace (POST/GET /workspaces). */
export interface UserCaller {
  kind: 'user'
  userId: string
  /** The token's claims, for a first membership. */
  name?: string
  email?: string
}

/** A public route: nobody is authenticated. */
export interface AnonymousCaller {
  kind: 'anonymous'
}

/** Work the process does on its own (a job). */
export interface SystemCaller {
  kind: 'system'
}

/**
 * Who may call a route, declared on the route itself (`config: { access }`, checked by
 * plugins/auth.ts at start-up and on every request):
 * - 'public': nobody is authenticated (health, bootstrap, public status, webhooks).
 * - { member: permission }: a member of the `x-workspace-id` workspace holding that permission.
 * - { member: permission, visitor: true }: that, or a visitor session (the domain then checks
 *   that the visitor owns what it asks for).
 * - { visitor: true }: a visitor session only.
 * - { member: 'any', workspace: false }: any valid member token, no workspace (POST/GET /workspaces).
 * - `anonymous: true` added to a member/visitor access: a request with no credentials at all but
 *   a signed link's token (`?token=`, GET /media/:id) gets the anonymous caller instead of a 401,
 *   and the domain verifies the token. Without one, or with a value that cannot be one (any
 *   length, before the query is validated: the token is the credential), 401. Credentials that
 *   are sent must still verify.
 */
export type Access = 'public' | { member?: Permission | 'any'; visitor?: boolean; workspace?: boolean; anonymous?: boolean }

/** The credentials a request or a socket handshake presents. */
export interface Credentials {
  /** A member token (the Bearer of an HTTP request). */
  memberToken?: string
  /** The workspace the member token is used for (x-workspace-id). */
  workspaceId?: string
  visitorSession?: string
  /** A signed link's token (`?token=` where the access admits `anonymous`), checked here for its form only. */
  linkToken?: string
}

type AuthDeps = Pick<Deps, 'memberTokens' | 'visitorTokens' | 'memberDirectory' | 'channelSessions'>

/**
 * The caller a route's access admits, from the credentials presented: a member token wins when
 * both kinds are sent. 401 without usable credentials, 400 WORKSPACE_REQUIRED, 403 for a
 * non-member, a disabled member or a missing permission.
 */
export async function resolveCaller(deps: AuthDeps, log: Log, access: Access, credentials: Credentials): Promise<Caller> {
  if (access === 'public') return { kind: 'anonymous' }
  if (access.member && credentials.memberToken) {
    const user = await verifyMemberToken(deps, log, credentials.memberToken)
    if (access.workspace === false) return user
    if (!credentials.workspaceId) throw workspaceRequired()
    return membership(deps, user, credentials.workspaceId, access.member)
  }
  if (access.visitor && credentials.visitorSession) return verifyVisitorSession(deps, log, credentials.visitorSession)
  if (access.anonymous && !credentials.memberToken && !credentials.visitorSession && credentials.linkToken !== undefined && isMediaTokenForm(credentials.linkToken)) {
    return { kind: 'anonymous' }
  }
  throw unauthorized()
}

/**
 * The user a member token names; 401 when it does not verify (the reason is logged, never
 * answered), 503 IDP_UNAVAILABLE when it could not be checked (the identity provider's keys could
 * not be fetched: the token is not known to be bad).
 */
export async function verifyMemberToken(deps: Pick<AuthDeps, 'memberTokens'>, log: Log, token: string): Promise<UserCaller> {
  try {
    const claims = await deps.memberTokens(token)
    return { kind: 'user', userId: claims.sub, name: claims.name, email: claims.email }
  } catch (err) {
    if (err instanceof IdpUnavailableError) {
      log.warn({ reason: err.message }, 'member token not checked: identity provider unavailable')
      throw idpUnavailable()
    }
    log.info({ reason: (err as Error).message }, 'member token refused')
    throw unauthorized('Invalid or expired token')
  }
}

/** The user's active membership of `workspaceId` (through the membership cache) holding `permission`; else 403. */
export async function membership(
  deps: Pick<AuthDeps, 'memberDirectory'>,
  user: UserCaller,
  workspaceId: string,
  permission: Permission | 'any',
): Promise<MemberCaller> {
  if (!isUuid(workspaceId)) throw notAMember()
  const record = await deps.memberDirectory.get(workspaceId.toLowerCase(), user.userId)
  if (!record) throw notAMember()
  if (record.status !== 'active') throw memberDisabled()
  if (permission !== 'any' && !can(record.role, permission)) throw missingPermission(permission)
  return { kind: 'member', workspaceId: record.workspaceId, userId: user.userId, role: record.role, name: record.name, email: record.email }
}

/**
 * The visitor a session names; 401 when it does not verify (expired, forged, another kind of
 * token), 401 SESSION_REVOKED when its channel was deactivated after it was signed (or is
 * inactive or gone): the channel's state comes through the ChannelSessions cache.
 */
export async function verifyVisitorSession(deps: Pick<AuthDeps, 'visitorTokens' | 'channelSessions'>, log: Log, token: string): Promise<VisitorCaller> {
  let c
  try {
    c = deps.visitorTokens.verify(token)
  } catch (err) {
    log.info({ reason: (err as Error).message }, 'visitor session refused')
    throw unauthorized('Invalid or expired visitor session')
  }
  if (!isUuid(c.channelId)) throw sessionRevoked()
  const channel = await deps.channelSessions.get(c.channelId.toLowerCase())
  if (!channel || !channel.active || c.epoch < channel.sessionEpoch) throw sessionRevoked()
  return { kind: 'visitor', guestId: c.guestId, channelId: c.channelId, workspaceId: c.workspaceId }
}
