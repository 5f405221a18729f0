import { createHmac, timingSafeEqual } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import type { VisitorSessionView } from '../../schemas/auth.js'
import type { Ctx } from '../context.js'
import { findActiveChannel, normalizeOrigin } from '../channels/channels.js'
import { badRequest, invalidIdentityHash, invalidVisitorSession, originNotAllowed } from '../errors.js'
import { checkChannelToken } from './channel-token.js'
import { TokenError } from './tokens.js'

export interface BootstrapInput {
  channelId: string
  name: string
  /** Optional: a visitor may chat before giving one (identityHash requires it). */
  email?: string
  identityHash?: string
}

export interface BootstrapHeaders {
  origin?: string
  channelToken?: string
  visitorSession?: string
}

export interface BootstrapResult {
  created: boolean
  body: VisitorSessionView
}

/** API.md: hex HMAC-SHA256 of the trimmed, lower-cased e-mail, keyed with the identitySecret string. */
export function identityHash(identitySecret: string, email: string): string {
  return createHmac('sha256', identitySecret).update(email.trim().toLowerCase()).digest('hex')
}

function hashMatches(secret: string, email: string, given: string): boolean {
  const expected = Buffer.from(identityHash(secret, email), 'hex')
  const actual = Buffer.from(given.toLowerCase(), 'hex')
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | undefined)?.code === '23505'

/**
 * POST /auth (API.md section 4). Checks, in order: the channel (404), the Origin (403), the
 * channel token (401), the identity hash (401); then resumes or creates the guest and signs a
 * visitor session. Only verified guests are ever matched by e-mail; a bare e-mail never is.
 */
export async function bootstrapVisitor(ctx: Ctx, input: BootstrapInput, headers: BootstrapHeaders): Promise<BootstrapResult> {
  const channel = await findActiveChannel(ctx.sql, input.channelId)

  if (headers.origin !== undefined && channel.allowedOrigins.length > 0) {
    const origin = normalizeOrigin(headers.origin)
    if (!origin || !channel.allowedOrigins.includes(origin)) {
      throw originNotAllowed()
    }
  }
  checkChannelToken(channel, headers.channelToken)
  const verified = input.identityHash !== undefined
  if (verified && input.email === undefined) throw badRequest("field 'email' is required with identityHash")
  if (verified && !hashMatches(channel.identitySecret, input.email!, input.identityHash!)) {
    throw invalidIdentityHash()
  }

  // A session resumes its guest only on the channel it was issued for; a valid session of another
  // channel is left alone and the caller gets a new guest here. An authentic session that has
  // expired is the widget's normal state after VISITOR_SESSION_TTL_S: it starts afresh too.
  // Anything that does not verify at all (forged, tampered, a member token) is a 401.
  let sessionGuestId: string | undefined
  if (headers.visitorSession) {
    try {
      const claims = ctx.visitorTokens.verify(headers.visitorSession)
      // A session revoked by a deactivation of the channel resumes nothing: a new guest (201).
      if (claims.channelId === channel.id && claims.epoch >= channel.sessionEpoch) sessionGuestId = claims.guestId
    } catch (err) {
      if (!(err instanceof TokenError && err.expired)) {
        ctx.log.info({ reason: (err as Error).message }, 'POST /auth: visitor session refused')
        throw invalidVisitorSession()
      }
    }
  }

  const name = input.name
  // Null: no address given. A resumed guest keeps the address it gave before.
  const email = input.email?.trim() ?? null

  const resolve = () =>
    ctx.sql.begin(async (tx): Promise<{ id: string; created: boolean }> => {
      if (verified) {
        const [known] = await tx<{ id: string }[]>`
          UPDATE guests SET name = ${name}, email = ${email}, updated_at = now(), last_seen_at = now()
          WHERE channel_id = ${channel.id} AND verified AND lower(email) = lower(${email})
          RETURNING id`
        if (known) return { id: known.id, created: false }
        if (sessionGuestId) {
          // The anonymous visitor has just proved who they are: their guest becomes the verified one.
          const [upgraded] = await tx<{ id: string }[]>`
            UPDATE guests SET name = ${name}, email = ${email}, verified = true, updated_at = now(), last_seen_at = now()
            WHERE id = ${sessionGuestId} AND channel_id = ${channel.id} AND NOT verified
            RETURNING id`
          if (upgraded) return { id: upgraded.id, created: false }
        }
      } else if (sessionGuestId) {
        // A verified guest that changes its e-mail without a hash is no longer verified: the new
        // address was never proved, and only proved addresses are matched (the old one is compared).
        const [resumed] = await tx<{ id: string }[]>`
          UPDATE guests SET name = ${name}, email = COALESCE(${email}, email),
            verified = verified AND lower(email) = lower(COALESCE(${email}, email)), updated_at = now(), last_seen_at = now()
          WHERE id = ${sessionGuestId} AND channel_id = ${channel.id}
          RETURNING id`
        if (resumed) return { id: resumed.id, created: false }
      }
      const id = uuidv7()
      await tx`
        INSERT INTO guests (id, workspace_id, channel_id, name, email, verified)
        VALUES (${id}, ${channel.workspaceId}, ${channel.id}, ${name}, ${email}, ${verified})`
      return { id, created: true }
    })

  let guest: { id: string; created: boolean }
  try {
    guest = await resolve()
  } catch (err) {
    // Two first logins of one verified e-mail at once: the loser finds the winner's guest.
    if (!isUniqueViolation(err)) throw err
    guest = await resolve()
  }

  const { token, expiresAt } = ctx.visitorTokens.sign({ guestId: guest.id, channelId: channel.id, workspaceId: channel.workspaceId, epoch: channel.sessionEpoch })
  return {
    created: guest.created,
    body: { visitorSession: token, guestId: guest.id, channelId: channel.id, workspaceId: channel.workspaceId, expiresAt },
  }
}
