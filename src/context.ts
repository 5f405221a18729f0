import type { MailReaders } from './email/reader.js'
import type { Caller, MemberCaller, UserCaller, VisitorCaller } from './auth/callers.js'
import type { ChannelSessions } from './auth/channel-sessions.js'
import type { MemberDirectory } from './auth/members.js'
import type { MemberVerifier, VisitorTokens } from './auth/tokens.js'
import type { Config } from './config.js'
import type { ProviderBVerifier } from './billing/provider-b.js'
import type { CursorCodec } from './cursor.js'
import type { Pool } from './db/client.js'
import type { Reads } from './db/replica.js'
import { internalError } from './errors.js'
import type { EventPublisher } from './events.js'
import type { Jobs } from './jobs.js'
import type { Log } from './logger.js'
import type { Mailer } from './mail.js'
import type { SharedState } from './mode.js'
import type { PresenceReader } from './presence.js'
import type { RateWindows } from './rate-windows.js'
import type { ThumbnailMaker } from './attachments/thumbnails.js'
import type { ObjectStorage } from './storage/storage.js'
import type { Router } from './teams/scheduler.js'
import type { ConversationBatch } from './conversations/batch.js'

/**
 * The process's infrastructure, built once by createDeps (src/deps.ts): what domain code may use
 * besides its input. Nothing else reaches domain code (no Fastify instance, no request).
 */
export interface Deps {
  config: Config
  log: Log
  sql: Pool
  /** The search pool (DATABASE_SEARCH_POOL_MAX): expensive reads queue here, not in `sql`. */
  searchSql: Pool
  /** Lag-tolerant reads (search, analytics, the CSV export, the visitors list): the replica or these pools (src/db/replica.ts). */
  reads: Reads
  /**
   * What processes share, Redis or this process's memory (src/mode.ts). Infrastructure only
   * (health, rate-limit store, the attached gateway); domain code uses `events` and `presence`.
   */
  shared: SharedState
  events: EventPublisher
  /** Members' presence (available agents): Redis, or the attached gateway's in-process store. */
  presence: PresenceReader
  jobs: Jobs
  mailer: Mailer
  memberTokens: MemberVerifier
  visitorTokens: VisitorTokens
  memberDirectory: MemberDirectory
  /** Channel state behind every visitor session (revocation), cached like memberships. */
  channelSessions: ChannelSessions
  /** Time-window counters of the rate limits (Redis, with an in-process fallback). */
  rateWindows: RateWindows
  /** Signs and checks every list's pagination cursors. */
  cursor: CursorCodec
  /** Runs routing passes after commits, on signals and on its sweep (src/teams/scheduler.ts). */
  routing: Router
  /** E-mail channels' mailbox readers (src/email/reader.ts); started with JOBS_WORKER. */
  mailReaders: MailReaders
  /** Provider B's webhook verification API client (null: not configured). */
  providerB: ProviderBVerifier | null
  /** Attachment bytes (STORAGE_DRIVER: local disk or S3). */
  storage: ObjectStorage
  /** Thumbnails being made in this process: THUMBNAIL_CONCURRENCY at once, identical requests share one. */
  thumbnails: ThumbnailMaker
}

/**
 * The one argument every domain entry point takes first: the process's infrastructure plus who is
 * calling, and the logger of this request or job. A route passes `request.ctx` (built by
 * plugins/auth.ts once the caller is authenticated); a job, the benchmark or a test builds one
 * with contextFor. Domain code never sees a request or the Fastify instance.
 */
export interface Ctx extends Deps {
  readonly caller: Caller
  /**
   * Set only inside a bulk request's one transaction, or a mailbox's batch of mails
   * (src/email/inbound.ts importBatch; src/conversations/batch.ts): each
   * conversation's change joins it (mutateConversation) instead of opening its own.
   */
  readonly batch?: ConversationBatch
}

export function contextFor(deps: Deps, caller: Caller, log: Log = deps.log): Ctx {
  return { ...deps, caller, log }
}

/*
 * The caller helpers: a route's `config.access` guarantees the caller's kind before domain code
 * runs, so a function reached by another kind is a declaration bug, 500 INTERNAL_ERROR, never a
 * 403 (an HTTP caller of the wrong kind was refused by plugins/auth.ts already).
 */

/** A route declared for members only calls this. */
export function memberOf(ctx: Ctx): MemberCaller {
  if (ctx.caller.kind !== 'member') throw internalError(`a member was expected, not a ${ctx.caller.kind} caller`)
  return ctx.caller
}

/** A route declared for visitors only calls this. */
export function visitorOf(ctx: Ctx): VisitorCaller {
  if (ctx.caller.kind !== 'visitor') throw internalError(`a visitor was expected, not a ${ctx.caller.kind} caller`)
  return ctx.caller
}

/** Who writes a message or uploads a file: an agent (the member's userId) or the visitor's guest. */
export type Sender = { type: 'AGENT'; id: string; member: MemberCaller } | { type: 'GUEST'; id: string; visitor: VisitorCaller }

/** The sender of a route declared for members and visitors; the one AGENT/GUEST mapping. */
export function senderOf(ctx: Ctx): Sender {
  const c = ctx.caller
  if (c.kind === 'member') return { type: 'AGENT', id: c.userId, member: c }
  if (c.kind === 'visitor') return { type: 'GUEST', id: c.guestId, visitor: c }
  throw internalError(`a member or visitor was expected, not a ${c.kind} caller`)
}

/** A route declared with `workspace: false` (a member token naming no workspace) calls this. */
export function userOf(ctx: Ctx): UserCaller {
  if (ctx.caller.kind !== 'user') throw internalError(`a signed-in user was expected, not a ${ctx.caller.kind} caller`)
  return ctx.caller
}

/** The caller's workspace, member or visitor. */
export function workspaceOf(ctx: Ctx): string {
  const c = ctx.caller
  if (c.kind === 'member' || c.kind === 'visitor') return c.workspaceId
  throw internalError(`a workspace caller was expected, not a ${c.kind} caller`)
}
