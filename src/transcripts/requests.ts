import { v5 as uuidv5, v7 as uuidv7 } from 'uuid'
import type { Ctx } from '../context.js'
import { findConversationForCaller } from '../conversations/access.js'
import { forbidden, idempotencyKeyReused, emailRequired, rateLimited } from '../errors.js'
import { TRANSCRIPT_QUEUE, type TranscriptJob } from './worker.js'

/** Namespace of request ids derived from an Idempotency-Key (any fixed UUID). */
const IDEMPOTENCY_NS = 'a3c1e6f2-5b7d-4e0a-9c2b-7f4d1e8a6b90'

export interface TranscriptQueued {
  jobId: string
  /** True when an identical request was already queued: no second mail. */
  deduplicated: boolean
}

/**
 * Records a transcript e-mail request and enqueues its job in one transaction.
 *
 * - Who may send where: a member names any address (default: the guest's); a visitor only its
 *   own guest's address (403 otherwise).
 * - The same request: with an Idempotency-Key header, the same key from the same caller on
 *   the same conversation (forever; the key with another address is 409). Without one: same
 *   caller, conversation and address (case-insensitive), while the earlier request is still
 *   queued or younger than TRANSCRIPT_DEDUPE_WINDOW_S. A retried HTTP call then gets the first
 *   jobId back and no second mail is sent (the mail is rendered at send time, so it would have
 *   been identical anyway).
 * - The request row's id is the pg-boss job id and singleton key: one row, one job.
 * - A quota per conversation, counted on the request rows themselves under the lock (exact across
 *   replicas and restarts): TRANSCRIPT_RATE_LIMIT_PER_HOUR in any rolling hour, else 429 with
 *   Retry-After. A count about data, checked in the transaction: not a time-window rate limit
 *   (those are route configuration, plugins/rate-limit.ts).
 * - A quota per recipient for unverified guests: what visitors asked for that address (trimmed,
 *   lower-cased, any workspace) in a rolling day, TRANSCRIPT_UNVERIFIED_PER_DAY, else 429. This
 *   is what keeps the transcript mail from being a relay: a visitor can name any address at
 *   POST /auth, and re-run it to retarget its session (which the contract allows).
 * A per-conversation advisory lock (and a per-recipient one) serialises these checks against
 * concurrent requests.
 */
export async function requestTranscript(
  ctx: Ctx,
  id: string,
  { email, idempotencyKey }: { email?: string; idempotencyKey?: string },
): Promise<TranscriptQueued> {
  const conversation = await findConversationForCaller(ctx, id)
  const [guest] = await ctx.sql<{ email: string | null; verified: boolean }[]>`SELECT email, verified FROM guests WHERE id = ${conversation.guestId}`
  const guestEmail = guest?.email?.trim() ?? ''
  const caller = ctx.caller
  let target: string
  let requestedBy: string
  if (caller.kind === 'member') {
    target = email ?? guestEmail
    requestedBy = `member:${caller.userId}`
  } else if (caller.kind === 'visitor') {
    // A guest without an address has nothing to send to: it gives one first (POST /auth, an offline message).
    if (!guestEmail) throw emailRequired()
    if (email !== undefined && email.toLowerCase() !== guestEmail.toLowerCase()) {
      throw forbidden('A visitor may only send the transcript to its own e-mail address')
    }
    target = guestEmail
    requestedBy = `guest:${caller.guestId}`
  } else {
    throw forbidden()
  }
  if (!target) throw emailRequired()

  const limit = ctx.config.TRANSCRIPT_RATE_LIMIT_PER_HOUR
  const window = ctx.config.TRANSCRIPT_DEDUPE_WINDOW_S
  // An unverified guest's address was never proved to be theirs (POST /auth takes any address and
  // a session may change it): what visitors ask for it is capped per recipient, across workspaces.
  const recipient = caller.kind === 'visitor' && !guest?.verified ? target.trim().toLowerCase() : null
  const result = await ctx.sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`transcript:${conversation.id}`}, 0))`
    // Taken after the conversation's lock, always in this order: no deadlock between the two.
    if (recipient) await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`transcript-recipient:${recipient}`}, 0))`
    // With a key, the request id is derived from it: a replay finds its row, whenever it comes.
    const keyed = idempotencyKey ? uuidv5(`${conversation.id}\n${requestedBy}\n${idempotencyKey}`, IDEMPOTENCY_NS) : null
    if (keyed) {
      const [first] = await tx<{ email: string }[]>`SELECT email FROM transcript_requests WHERE id = ${keyed}`
      if (first) {
        if (first.email.toLowerCase() !== target.toLowerCase()) {
          throw idempotencyKeyReused()
        }
        return { jobId: keyed, deduplicated: true }
      }
    }
    const [same] = keyed ? [] : await tx<{ id: string }[]>`
      SELECT id FROM transcript_requests
      WHERE conversation_id = ${conversation.id} AND requested_by = ${requestedBy} AND lower(email) = lower(${target})
        AND (status = 'queued' OR created_at > now() - make_interval(secs => ${window}))
      ORDER BY created_at DESC LIMIT 1`
    if (same) return { jobId: same.id, deduplicated: true }

    const [usage] = await tx<{ n: number; retryAfter: number | null }[]>`
      SELECT count(*)::int AS n,
             ceil(extract(epoch FROM min(created_at) + interval '1 hour' - now()))::int AS "retryAfter"
      FROM transcript_requests
      WHERE conversation_id = ${conversation.id} AND created_at > now() - interval '1 hour'`
    if (usage && usage.n >= limit) {
      const retryAfter = Math.max(1, usage.retryAfter ?? 3600)
      throw rateLimited(retryAfter, `Too many transcript requests for this conversation, retry in ${retryAfter} s`)
    }

    if (recipient) {
      const perDay = ctx.config.TRANSCRIPT_UNVERIFIED_PER_DAY
      // transcript_requests_visitor_recipient_idx: what visitors asked for this address in a rolling day.
      const [sent] = await tx<{ n: number; retryAfter: number | null }[]>`
        SELECT count(*)::int AS n,
               ceil(extract(epoch FROM min(created_at) + interval '1 day' - now()))::int AS "retryAfter"
        FROM transcript_requests
        WHERE lower(email) = ${recipient} AND requested_by LIKE 'guest:%' AND created_at > now() - interval '1 day'`
      if (sent && sent.n >= perDay) {
        const retryAfter = Math.max(1, sent.retryAfter ?? 86_400)
        throw rateLimited(retryAfter, `Too many transcript requests for this address, retry in ${retryAfter} s`)
      }
    }

    const id = keyed ?? uuidv7()
    await tx`
      INSERT INTO transcript_requests (id, workspace_id, conversation_id, email, requested_by)
      VALUES (${id}, ${conversation.workspaceId}, ${conversation.id}, ${target}, ${requestedBy})`
    const data: TranscriptJob = { requestId: id }
    const jobId = await ctx.jobs.send(tx, TRANSCRIPT_QUEUE, data, { id, singletonKey: id })
    if (jobId !== id) throw new Error(`transcript job was not enqueued (${jobId})`)
    return { jobId: id, deduplicated: false }
  })
  if (!result.deduplicated) ctx.jobs.wake(TRANSCRIPT_QUEUE)
  return result
}
