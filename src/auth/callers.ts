import type { Role } from '../db/schema.js'

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
