import { randomBytes, randomUUID } from 'node:crypto'
import { and, asc, eq } from 'drizzle-orm'
import { can } from '../auth/permissions.js'
import { memberOf, type Ctx } from '../context.js'
import type { Db } from '../db/client.js'
import { channels } from '../db/schema.js'
import { badRequest, notFound } from '../errors.js'
import { iso } from '../time.js'

export type ChannelRow = typeof channels.$inferSelect

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const channelNotFound = () => notFound('CHANNEL_NOT_FOUND', 'Channel not found')

/** Public widget token: unguessable, URL-safe, recognisable in a snippet. */
export const newChannelToken = () => `ct_${randomBytes(24).toString('base64url')}`
/** HMAC key the customer's backend uses for identityHash. */
export const newIdentitySecret = () => `is_${randomBytes(32).toString('hex')}`

/**
 * Origins are stored the way browsers send them (URL.origin: lower-case host, no default port),
 * so the check in POST /auth is a plain comparison.
 */
export function normalizeOrigins(origins: string[]): string[] {
  const out = new Set<string>()
  origins.forEach((o, i) => {
    let url: URL
    try {
      url = new URL(o)
    } catch {
      throw badRequest(`field 'allowedOrigins.${i}' is not a valid origin`)
    }
    out.add(url.origin)
  })
  return [...out]
}

export function normalizeOrigin(origin: string): string | null {
  try {
    const url = new URL(origin)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null
  } catch {
    return null
  }
}

/** A channel as the API shows it; identitySecret only to callers who may manage channels. */
function channelView(row: ChannelRow, withSecret: boolean) {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    active: row.active,
    allowedOrigins: row.allowedOrigins,
    requireChannelToken: row.requireChannelToken,
    channelToken: row.channelToken,
    ...(withSecret ? { identitySecret: row.identitySecret } : {}),
    createdAt: iso(row.createdAt),
  }
}

export async function createChannel(ctx: Ctx, input: { name: string; allowedOrigins?: string[]; requireChannelToken?: boolean }) {
  const [row] = await ctx.db
    .insert(channels)
    .values({
      id: randomUUID(),
      workspaceId: memberOf(ctx).workspaceId,
      name: input.name,
      allowedOrigins: normalizeOrigins(input.allowedOrigins ?? []),
      requireChannelToken: input.requireChannelToken ?? false,
      channelToken: newChannelToken(),
      identitySecret: newIdentitySecret(),
    })
    .returning()
  return channelView(row, true)
}

/** Every channel of the workspace, inactive ones included, oldest first (channels_workspace_idx). */
export async function listChannels(ctx: Ctx) {
  const { workspaceId, role } = memberOf(ctx)
  const rows = await ctx.db.select().from(channels).where(eq(channels.workspaceId, workspaceId)).orderBy(asc(channels.createdAt), asc(channels.id))
  const withSecret = can(role, 'channels:manage')
  return { data: rows.map((r) => channelView(r, withSecret)) }
}

/** Scoped update: an id of another workspace (or a malformed one) is 404, like an unknown one. */
export async function updateChannel(
  ctx: Ctx,
  id: string,
  patch: { name?: string; allowedOrigins?: string[]; requireChannelToken?: boolean; active?: boolean },
) {
  if (!UUID.test(id)) throw channelNotFound()
  const { workspaceId } = memberOf(ctx)
  const set = {
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(patch.allowedOrigins !== undefined ? { allowedOrigins: normalizeOrigins(patch.allowedOrigins) } : {}),
    ...(patch.requireChannelToken !== undefined ? { requireChannelToken: patch.requireChannelToken } : {}),
    ...(patch.active !== undefined ? { active: patch.active } : {}),
  }
  const [row] = await ctx.db
    .update(channels)
    .set(set)
    .where(and(eq(channels.id, id), eq(channels.workspaceId, workspaceId)))
    .returning()
  if (!row) throw channelNotFound()
  return channelView(row, true)
}

export async function rotateChannelToken(ctx: Ctx, id: string) {
  if (!UUID.test(id)) throw channelNotFound()
  const { workspaceId } = memberOf(ctx)
  const [row] = await ctx.db
    .update(channels)
    .set({ channelToken: newChannelToken() })
    .where(and(eq(channels.id, id), eq(channels.workspaceId, workspaceId)))
    .returning()
  if (!row) throw channelNotFound()
  return channelView(row, true)
}

/** The channel a widget names in POST /auth: unknown and inactive are the same 404. */
export async function findActiveChannel(db: Db, id: string): Promise<ChannelRow> {
  const [row] = await db.select().from(channels).where(eq(channels.id, id)).limit(1)
  if (!row || !row.active) throw channelNotFound()
  return row
}
