import type { UpdateVisitorInput, VisitorProfileView, VisitorView } from '../../schemas/visitors.js'
import { memberOf, type Ctx, type Deps } from '../context.js'
import { keysetPage, type Page } from '../cursor.js'
import type { Sql } from '../db/client.js'
import type { guests } from '../db/schema.js'
import { badRequest, dependencyUnavailable, guestNotFound } from '../errors.js'
import { rooms } from '../events.js'
import type { VisitorPresence } from '../presence.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { ATTRIBUTES_MAX, mergeAttributes, type AttributeMap } from './attributes.js'

/**
 * The contact record of visitors (API.md section 13): the guest row plus what the gateway keeps in
 * presence (`ctx.presence`: online, current page, page visits). Lists are keyset pages on (last_seen_at, id) newest
 * first (guests_workspace_seen_idx, guests_channel_seen_idx); `q` is a substring of the name or
 * e-mail matched by the trigram indexes the conversation search uses.
 */

type GuestRecord = Pick<typeof guests.$inferSelect, 'id' | 'channelId' | 'name' | 'email' | 'verified' | 'createdAt' | 'lastSeenAt'> & {
  attributes: AttributeMap
  conversationCount: number
}

/** Aliased columns of `guests g`; conversationCount over conv_guest_idx (live conversations). */
const VISITOR_SELECT = `
  g.id, g.channel_id AS "channelId", g.name, g.email, g.verified, g.attributes,
  g.created_at AS "createdAt", g.last_seen_at AS "lastSeenAt",
  (SELECT count(*) FROM conversations c WHERE c.guest_id = g.id AND c.deleted_at IS NULL)::int AS "conversationCount"`

type PresenceDeps = Pick<Deps, 'presence' | 'log'>

function toView(r: GuestRecord, p: VisitorPresence | undefined): VisitorView {
  return {
    id: r.id,
    channelId: r.channelId,
    name: r.name,
    email: r.email,
    verified: r.verified,
    attributes: r.attributes,
    online: p?.online ?? false,
    currentPage: p?.currentPage ?? null,
    createdAt: iso(r.createdAt),
    lastSeenAt: iso(r.lastSeenAt),
    conversationCount: r.conversationCount,
  }
}

/** Presence of the rows' guests; presence unreadable (Redis down): everyone offline (the contact data still helps), logged. */
async function withPresence(deps: PresenceDeps, rows: GuestRecord[]): Promise<VisitorView[]> {
  let presence = new Map<string, VisitorPresence>()
  try {
    presence = await deps.presence.visitors(rows.map((r) => r.id))
  } catch (err) {
    deps.log.warn({ err: { message: (err as Error).message } }, 'visitor presence unavailable; reporting everyone offline')
  }
  return rows.map((r) => toView(r, presence.get(r.id)))
}

async function guestRows(sql: Sql, workspaceId: string, ids: string[]): Promise<GuestRecord[]> {
  if (ids.length === 0) return []
  return sql<GuestRecord[]>`
    SELECT ${sql.unsafe(VISITOR_SELECT)} FROM guests g
    WHERE g.workspace_id = ${workspaceId} AND g.id = ANY(${ids}::uuid[])`
}

/**
 * One visitor as the API shows it, by workspace and id (the gateway's visitor:updated payload);
 * null when it does not exist.
 */
export async function loadVisitor(deps: PresenceDeps & Pick<Deps, 'sql'>, workspaceId: string, guestId: string): Promise<VisitorView | null> {
  const [row] = await guestRows(deps.sql, workspaceId, [guestId])
  return row ? (await withPresence(deps, [row]))[0] : null
}

export interface VisitorListQuery {
  q?: string
  channelId?: string
  online?: boolean
  limit: number
  cursor?: string
}

/** `%term%` for ILIKE with the term's own wildcards escaped. */
const containsPattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** A read the answer depends on (who is online): when presence is unreadable (Redis down) it cannot be given, 503. */
async function presenceRead<T>(ctx: Ctx, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    ctx.log.warn({ err: { message: (err as Error).message } }, 'visitor presence unavailable')
    throw dependencyUnavailable('Visitor presence is unavailable; retry later')
  }
}

/** GET /visitors: the workspace's guests, most recent lastSeenAt first. */
export async function listVisitors(ctx: Ctx, query: VisitorListQuery): Promise<Page<VisitorView>> {
  const { workspaceId } = memberOf(ctx)
  const pattern = query.q ? containsPattern(query.q) : null
  const page = await keysetPage(ctx, {
    cursor: query.cursor,
    params: { list: 'visitors', q: query.q?.toLowerCase(), channelId: query.channelId?.toLowerCase(), online: query.online },
    key: ['timestamp', 'uuid'],
    limit: query.limit,
    fetch: async (after, take) => {
      // The online filter takes the workspace's online set from presence (what the gateway keeps)
      // and keeps (or drops) those ids in the same keyset scan.
      let onlineIds: string[] | null = null
      if (query.online !== undefined) onlineIds = await presenceRead(ctx, () => ctx.presence.onlineVisitorSet(workspaceId))
      // The list reads the replica while it is online (src/db/replica.ts); the same statement either way.
      return ctx.reads.run('main', (sql) => sql<GuestRecord[]>`
        SELECT ${sql.unsafe(VISITOR_SELECT)} FROM guests g
        WHERE ${query.channelId ? sql`g.channel_id = ${query.channelId} AND g.workspace_id = ${workspaceId}` : sql`g.workspace_id = ${workspaceId}`}
          ${pattern ? sql`AND (g.name ILIKE ${pattern} OR g.email ILIKE ${pattern})` : sql``}
          ${onlineIds !== null && query.online ? sql`AND g.id = ANY(${onlineIds}::uuid[])` : sql``}
          ${onlineIds !== null && !query.online ? sql`AND NOT (g.id = ANY(${onlineIds}::uuid[]))` : sql``}
          ${after ? sql`AND (g.last_seen_at, g.id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
        ORDER BY g.last_seen_at DESC, g.id DESC
        LIMIT ${take}`)
    },
    keyOf: (g) => [g.lastSeenAt, g.id],
  })
  return { data: await withPresence(ctx, page.data), nextCursor: page.nextCursor }
}

/** GET /visitors/online: guests with a live gateway connection, most recently connected first. */
export async function onlineVisitors(ctx: Ctx): Promise<{ data: VisitorView[] }> {
  const { workspaceId } = memberOf(ctx)
  const ids = await presenceRead(ctx, () => ctx.presence.onlineVisitors(workspaceId))
  const rows = await guestRows(ctx.sql, workspaceId, ids)
  const byId = new Map(rows.map((r) => [r.id, r]))
  const ordered = ids.map((id) => byId.get(id)).filter((r): r is GuestRecord => r !== undefined)
  return { data: await withPresence(ctx, ordered) }
}

/** GET /visitors/:guestId: the visitor and its last page visits. */
export async function getVisitor(ctx: Ctx, guestId: string): Promise<VisitorProfileView> {
  if (!isUuid(guestId)) throw guestNotFound()
  const { workspaceId } = memberOf(ctx)
  const visitor = await loadVisitor(ctx, workspaceId, guestId)
  if (!visitor) throw guestNotFound()
  let pageVisits: VisitorProfileView['pageVisits'] = []
  try {
    pageVisits = await ctx.presence.pageVisits(guestId)
  } catch (err) {
    ctx.log.warn({ err: { message: (err as Error).message } }, 'page visits unavailable')
  }
  return { ...visitor, pageVisits }
}

/**
 * PATCH /visitors/:guestId. Under the row lock: attributes merged (null removes a key) and the
 * stored result checked against the 50-key limit; a changed e-mail is no longer verified (only
 * proved addresses are matched by POST /auth). Publishes visitor:updated to the workspace.
 */
export async function updateVisitor(ctx: Ctx, guestId: string, patch: UpdateVisitorInput): Promise<VisitorView> {
  if (!isUuid(guestId)) throw guestNotFound()
  const { workspaceId } = memberOf(ctx)
  await ctx.sql.begin(async (tx) => {
    const [row] = await tx<{ attributes: AttributeMap }[]>`
      SELECT attributes FROM guests WHERE id = ${guestId} AND workspace_id = ${workspaceId} FOR UPDATE`
    if (!row) throw guestNotFound()
    let attributes: AttributeMap | null = null
    if (patch.attributes) {
      attributes = mergeAttributes(row.attributes, patch.attributes as Record<string, string | number | boolean | null>)
      if (Object.keys(attributes).length > ATTRIBUTES_MAX) {
        throw badRequest(`field 'attributes' would hold more than ${ATTRIBUTES_MAX} keys`)
      }
    }
    const email = patch.email === undefined ? undefined : patch.email === null ? null : patch.email.trim()
    await tx`
      UPDATE guests SET
        name = COALESCE(${patch.name ?? null}, name),
        email = CASE WHEN ${email !== undefined} THEN ${email ?? null} ELSE email END,
        verified = verified AND (${email === undefined} OR lower(email) IS NOT DISTINCT FROM lower(${email ?? null})),
        attributes = COALESCE(${attributes === null ? null : JSON.stringify(attributes)}::jsonb, attributes),
        updated_at = now()
      WHERE id = ${guestId}`
  })
  const visitor = (await loadVisitor(ctx, workspaceId, guestId))!
  ctx.events.publish([rooms.workspace(workspaceId)], 'visitor:updated', { visitor })
  return visitor
}

/** lastSeenAt moves on a bootstrap, a guest message and a gateway connection. */
export async function touchLastSeen(sql: Sql, guestId: string): Promise<void> {
  await sql`UPDATE guests SET last_seen_at = now() WHERE id = ${guestId}`
}
