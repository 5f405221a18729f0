import { v7 as uuidv7 } from 'uuid'
import type { MentionView } from '../../schemas/mentions.js'
import { memberOf, type Ctx } from '../context.js'
import { keysetPage, type Page } from '../cursor.js'
import type { Sql } from '../db/client.js'
import { invalidMention, mentionNotFound } from '../errors.js'
import { rooms } from '../events.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { MENTION_QUEUE, type MentionJob } from './mail.js'

/**
 * Mentions (API.md section 12): one row per notified member of a private note, written in the
 * note's transaction; `mention_counters` keeps each member's unread count in the same
 * transactions as every change (insert, read, read-all, the conversation's delete), so the count
 * is one row read. A deleted conversation's mentions are deleted with it (its delete is final):
 * they leave the lists and the count, and their ids are 404.
 */

const EXCERPT_LENGTH = 140

const MENTION_COLUMNS = `
  id, conversation_id AS "conversationId", message_id AS "messageId", by_user_id AS "byUserId",
  by_name AS "byName", excerpt, created_at AS "createdAt", read_at AS "readAt"`

type MentionRecord = Omit<MentionView, 'createdAt' | 'readAt'> & { createdAt: string; readAt: string | null }

const toView = (r: MentionRecord): MentionView => ({ ...r, createdAt: iso(r.createdAt), readAt: r.readAt === null ? null : iso(r.readAt) })

/** The note's text on one line, cut at a code point boundary. */
export function excerptOf(body: string): string {
  return Array.from(body.replace(/\s+/g, ' ').trim()).slice(0, EXCERPT_LENGTH).join('')
}

export interface NewMentions {
  workspaceId: string
  userIds: string[]
  mentions: MentionView[]
}

/**
 * Inside the note's transaction: checks that every named member is an active member of the
 * workspace (else 400 INVALID_MENTION, and nothing is written), then writes one mention per named
 * member except the author, once each, moves their counters and enqueues the e-mails
 * (MENTION_EMAIL). Returns what to publish after commit.
 */
export async function addMentions(
  ctx: Ctx,
  sql: Sql,
  note: { workspaceId: string; conversationId: string; messageId: string; body: string; createdAt: string },
  named: string[],
): Promise<NewMentions> {
  const author = memberOf(ctx)
  const unique = [...new Set(named)]
  const empty = { workspaceId: note.workspaceId, userIds: [], mentions: [] }
  if (unique.length === 0) return empty
  const active = await sql<{ userId: string }[]>`
    SELECT user_id AS "userId" FROM members
    WHERE workspace_id = ${note.workspaceId} AND user_id = ANY(${unique}::text[]) AND status = 'active'`
  if (active.length !== unique.length) throw invalidMention()
  // Sorted, so concurrent notes naming the same members take the counter rows' locks in one order.
  const recipients = unique.filter((u) => u !== author.userId).sort()
  if (recipients.length === 0) return empty
  const excerpt = excerptOf(note.body)
  const ids = recipients.map(() => uuidv7())
  const rows = await sql<(MentionRecord & { userId: string })[]>`
    INSERT INTO mentions (id, workspace_id, user_id, conversation_id, message_id, by_user_id, by_name, excerpt, created_at)
    SELECT x.id, ${note.workspaceId}, x.user_id, ${note.conversationId}, ${note.messageId}, ${author.userId}, ${author.name},
           ${excerpt}, ${note.createdAt}::timestamptz
    FROM unnest(${ids}::uuid[], ${recipients}::text[]) AS x(id, user_id)
    RETURNING ${sql.unsafe(MENTION_COLUMNS)}, user_id AS "userId"`
  await sql`
    INSERT INTO mention_counters (workspace_id, user_id, unread)
    SELECT ${note.workspaceId}, u, 1 FROM unnest(${recipients}::text[]) AS u ORDER BY u
    ON CONFLICT (workspace_id, user_id) DO UPDATE SET unread = mention_counters.unread + 1`
  if (ctx.config.MENTION_EMAIL) {
    for (const r of rows) {
      const data: MentionJob = { mentionId: r.id }
      await ctx.jobs.send(sql, MENTION_QUEUE, data, { id: r.id, singletonKey: r.id })
    }
  }
  const byUser = new Map(rows.map((r) => [r.userId, r]))
  return {
    workspaceId: note.workspaceId,
    userIds: recipients,
    mentions: recipients.map((u) => {
      const { userId: _, ...m } = byUser.get(u)!
      return toView(m)
    }),
  }
}

/** After the note's commit: mention:new to each mentioned member's own room, and wake the mail worker. */
export function publishMentions(ctx: Ctx, added: NewMentions): void {
  added.userIds.forEach((userId, i) => {
    ctx.events.publish([rooms.member(added.workspaceId, userId)], 'mention:new', { mention: added.mentions[i] })
  })
  if (ctx.config.MENTION_EMAIL && added.userIds.length > 0) ctx.jobs.wake(MENTION_QUEUE)
}

/** Inside a conversation's delete: its mentions go, and the unread ones leave their members' counts. */
export async function removeConversationMentions(sql: Sql, conversationId: string): Promise<void> {
  await sql`
    WITH gone AS (
      DELETE FROM mentions WHERE conversation_id = ${conversationId}
      RETURNING workspace_id, user_id, read_at IS NULL AS unread
    ), n AS (
      SELECT workspace_id, user_id, count(*)::int AS n FROM gone WHERE unread GROUP BY workspace_id, user_id
    )
    UPDATE mention_counters mc SET unread = mc.unread - n.n
    FROM n WHERE mc.workspace_id = n.workspace_id AND mc.user_id = n.user_id`
}

/** GET /mentions: the caller's, newest first, keyset on (created_at, id). */
export async function listMentions(ctx: Ctx, query: { unread?: boolean; limit: number; cursor?: string }): Promise<Page<MentionView>> {
  const me = memberOf(ctx)
  const { sql } = ctx
  const filter = query.unread === true ? sql`AND read_at IS NULL` : query.unread === false ? sql`AND read_at IS NOT NULL` : sql``
  const page = await keysetPage(ctx, {
    cursor: query.cursor,
    params: { list: 'mentions', unread: query.unread ?? null },
    key: ['timestamp', 'uuid'],
    limit: query.limit,
    fetch: (before, take) => sql<MentionRecord[]>`
      SELECT ${sql.unsafe(MENTION_COLUMNS)} FROM mentions
      WHERE workspace_id = ${me.workspaceId} AND user_id = ${me.userId} ${filter}
        ${before ? sql`AND (created_at, id) < (${before[0]}::timestamptz, ${before[1]}::uuid)` : sql``}
      ORDER BY created_at DESC, id DESC
      LIMIT ${take}`,
    keyOf: (m) => [m.createdAt, m.id],
  })
  return { data: page.data.map(toView), nextCursor: page.nextCursor }
}

/** GET /mentions/unread-count: the caller's counter row. */
export async function unreadMentions(ctx: Ctx): Promise<{ count: number }> {
  const me = memberOf(ctx)
  const [row] = await ctx.sql<{ unread: number }[]>`
    SELECT unread FROM mention_counters WHERE workspace_id = ${me.workspaceId} AND user_id = ${me.userId}`
  return { count: row?.unread ?? 0 }
}

/** PATCH /mentions/:id/read: the caller's own mention only (another member's: 404); reading it again changes nothing. */
export async function readMention(ctx: Ctx, id: string): Promise<MentionView> {
  const me = memberOf(ctx)
  if (!isUuid(id)) throw mentionNotFound()
  return ctx.sql.begin(async (sql) => {
    // The row lock orders this against a concurrent read-all or delete: only one of them counts it.
    const [updated] = await sql<MentionRecord[]>`
      UPDATE mentions SET read_at = clock_timestamp()
      WHERE id = ${id} AND workspace_id = ${me.workspaceId} AND user_id = ${me.userId} AND read_at IS NULL
      RETURNING ${sql.unsafe(MENTION_COLUMNS)}`
    if (updated) {
      await sql`UPDATE mention_counters SET unread = unread - 1 WHERE workspace_id = ${me.workspaceId} AND user_id = ${me.userId}`
      return toView(updated)
    }
    const [row] = await sql<MentionRecord[]>`
      SELECT ${sql.unsafe(MENTION_COLUMNS)} FROM mentions WHERE id = ${id} AND workspace_id = ${me.workspaceId} AND user_id = ${me.userId}`
    if (!row) throw mentionNotFound()
    return toView(row)
  })
}

/** POST /mentions/read-all: marks the caller's unread mentions read; `updated` is how many. */
export async function readAllMentions(ctx: Ctx): Promise<{ updated: number }> {
  const me = memberOf(ctx)
  return ctx.sql.begin(async (sql) => {
    const [{ n }] = await sql<{ n: number }[]>`
      WITH r AS (
        UPDATE mentions SET read_at = clock_timestamp()
        WHERE workspace_id = ${me.workspaceId} AND user_id = ${me.userId} AND read_at IS NULL
        RETURNING 1
      ) SELECT count(*)::int AS n FROM r`
    if (n > 0) await sql`UPDATE mention_counters SET unread = unread - ${n} WHERE workspace_id = ${me.workspaceId} AND user_id = ${me.userId}`
    return { updated: n }
  })
}
