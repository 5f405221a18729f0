import { recordCsat } from '../analytics/record.js'
import type { CsatInput, CsatView } from '../../schemas/support.js'
import { visitorOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { channels, conversations, csatRatings } from '../db/schema.js'
import { conversationNotFound, csatClosed, csatNotFound, csatNotOpen } from '../errors.js'
import { findConversationForCaller } from '../conversations/access.js'
import { conversationVisibleTo } from '../conversations/visibility.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { widgetSettings } from './widget-settings.js'

/** A rating may be replaced for this long after it was first given (API.md section 14). */
export const CSAT_REPLACE_DAYS = 14

const CSAT_COLUMNS = `conversation_id AS "conversationId", rating, comment, created_at AS "createdAt", updated_at AS "updatedAt"`

/** The conversation a rating is for, with its channel's widget settings (csatEnabled). */
type RatedConversation = Pick<typeof conversations.$inferSelect, 'id' | 'channelId' | 'assignedAgentId' | 'status'> &
  Pick<typeof channels.$inferSelect, 'widget'>

type CsatRecord = Pick<typeof csatRatings.$inferSelect, 'conversationId' | 'rating' | 'comment' | 'createdAt' | 'updatedAt'>

const toView = (r: CsatRecord): CsatView => ({ ...r, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) })

export interface RatingOutcome {
  rating: CsatView
  /** True for the first rating (201), false when it replaced one (200). */
  created: boolean
}

/**
 * POST /support/csat: the conversation's visitor rates it. One transaction, holding the
 * conversation row lock, so concurrent ratings of one conversation apply one after another:
 * - another guest's (or a missing, deleted, malformed) conversation: 404;
 * - open only on a RESOLVED (or legacy CLOSED) conversation of a channel with csatEnabled: else
 *   409 CSAT_NOT_OPEN;
 * - the first rating inserts the row (201); another within CSAT_REPLACE_DAYS of the first
 *   replaces rating and comment, keeping createdAt (200); later: 409 CSAT_CLOSED.
 * Analytics records its metric event inside this same transaction (the `tx` below).
 */
export async function rateConversation(ctx: Ctx, input: CsatInput): Promise<RatingOutcome> {
  const v = visitorOf(ctx)
  if (!isUuid(input.conversationId)) throw conversationNotFound()
  return ctx.sql.begin(async (tx) => {
    const [conv] = await tx<RatedConversation[]>`
      SELECT c.id, c.channel_id AS "channelId", c.assigned_agent_id AS "assignedAgentId", c.status, ch.widget
      FROM conversations c JOIN channels ch ON ch.id = c.channel_id
      WHERE c.id = ${input.conversationId} AND ${conversationVisibleTo(tx, v, 'c')}
      FOR UPDATE OF c`
    if (!conv) throw conversationNotFound()
    if (!(conv.status === 'RESOLVED' || conv.status === 'CLOSED') || !widgetSettings(conv.widget).csatEnabled) throw csatNotOpen()
    const comment = input.comment ?? null
    const [replaced] = await tx<(CsatRecord & { open: boolean })[]>`
      SELECT ${tx.unsafe(CSAT_COLUMNS)}, created_at > now() - make_interval(days => ${CSAT_REPLACE_DAYS}) AS open
      FROM csat_ratings WHERE conversation_id = ${conv.id}`
    if (replaced && !replaced.open) throw csatClosed()
    const rating = replaced ? await replaceRating(tx, conv.id, input.rating, comment) : await insertRating(tx, v, conv, input.rating, comment)
    // Analytics: the rating's sample, in this transaction (a replacement moves it to the new rating and time).
    await recordCsat(tx, { id: conv.id, workspaceId: v.workspaceId, channelId: conv.channelId, assignedAgentId: conv.assignedAgentId }, rating.rating, rating.updatedAt)
    return { rating: toView(rating), created: !replaced }
  })
}

async function insertRating(
  tx: Sql,
  v: { workspaceId: string; guestId: string },
  conv: { id: string; channelId: string },
  rating: number,
  comment: string | null,
): Promise<CsatRecord> {
  const [row] = await tx<CsatRecord[]>`
    INSERT INTO csat_ratings (conversation_id, workspace_id, channel_id, guest_id, rating, comment)
    VALUES (${conv.id}, ${v.workspaceId}, ${conv.channelId}, ${v.guestId}, ${rating}, ${comment})
    RETURNING ${tx.unsafe(CSAT_COLUMNS)}`
  return row
}

async function replaceRating(tx: Sql, conversationId: string, rating: number, comment: string | null): Promise<CsatRecord> {
  const [row] = await tx<CsatRecord[]>`
    UPDATE csat_ratings SET rating = ${rating}, comment = ${comment}, updated_at = now()
    WHERE conversation_id = ${conversationId}
    RETURNING ${tx.unsafe(CSAT_COLUMNS)}`
  return row
}

/** GET /conversations/:id/csat: members of the workspace, or the conversation's visitor. */
export async function getRating(ctx: Ctx, conversationId: string): Promise<CsatView> {
  const conv = await findConversationForCaller(ctx, conversationId)
  const [row] = await ctx.sql<CsatRecord[]>`SELECT ${ctx.sql.unsafe(CSAT_COLUMNS)} FROM csat_ratings WHERE conversation_id = ${conv.id}`
  if (!row) throw csatNotFound()
  return toView(row)
}
