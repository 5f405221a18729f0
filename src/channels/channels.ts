import { randomBytes, randomUUID } from 'node:crypto'
import type { ChannelView, WidgetPatchInput } from '../../schemas/channels.js'
import { can } from '../auth/permissions.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { channels } from '../db/schema.js'
import { badRequest, channelNotFound } from '../errors.js'
import { teamOfWorkspace } from '../teams/rules.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { checkWidgetPatch, widgetSettings } from '../support/widget-settings.js'

export type ChannelRow = typeof channels.$inferSelect

/** Every column of ChannelRow, aliased: the fixed list this module passes to sql.unsafe. */
const COLUMNS = `id, workspace_id AS "workspaceId", name, kind, active, allowed_origins AS "allowedOrigins",
  require_channel_token AS "requireChannelToken", channel_token AS "channelToken",
  identity_secret AS "identitySecret", session_epoch AS "sessionEpoch", widget, default_team_id AS "defaultTeamId", created_at AS "createdAt"`

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
function channelView(row: ChannelRow, withSecret: boolean): ChannelView {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    active: row.active,
    allowedOrigins: row.allowedOrigins,
    requireChannelToken: row.requireChannelToken,
    channelToken: row.channelToken,
    ...(withSecret ? { identitySecret: row.identitySecret } : {}),
    widget: widgetSettings(row.widget),
    defaultTeamId: row.defaultTeamId,
    createdAt: iso(row.createdAt),
  }
}

export async function createChannel(ctx: Ctx, input: { name: string; allowedOrigins?: string[]; requireChannelToken?: boolean }) {
  const { sql } = ctx
  const [row] = await sql<ChannelRow[]>`
    INSERT INTO channels (id, workspace_id, name, allowed_origins, require_channel_token, channel_token, identity_secret)
    VALUES (${randomUUID()}, ${memberOf(ctx).workspaceId}, ${input.name}, ${normalizeOrigins(input.allowedOrigins ?? [])}::text[],
            ${input.requireChannelToken ?? false}, ${newChannelToken()}, ${newIdentitySecret()})
    RETURNING ${sql.unsafe(COLUMNS)}`
  return channelView(row, true)
}

/** Every channel of the workspace, inactive ones included, oldest first (channels_workspace_idx). */
export async function listChannels(ctx: Ctx) {
  const { sql } = ctx
  const { workspaceId, role } = memberOf(ctx)
  const rows = await sql<ChannelRow[]>`
    SELECT ${sql.unsafe(COLUMNS)} FROM channels WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
  const withSecret = can(role, 'channels:manage')
  return { data: rows.map((r) => channelView(r, withSecret)) }
}

/** Scoped update of the fields given: an id of another workspace (or a malformed one) is 404, like an unknown one. */
export async function updateChannel(
  ctx: Ctx,
  id: string,
  patch: { name?: string; allowedOrigins?: string[]; requireChannelToken?: boolean; active?: boolean; widget?: WidgetPatchInput; defaultTeamId?: string | null },
) {
  if (!isUuid(id)) throw channelNotFound()
  const { sql } = ctx
  const team = patch.defaultTeamId ?? null
  if (team !== null) await teamOfWorkspace(sql, memberOf(ctx).workspaceId, team, 'defaultTeamId')
  const origins = patch.allowedOrigins === undefined ? null : normalizeOrigins(patch.allowedOrigins)
  // The widget fields named replace the stored ones (jsonb ||), the others are kept.
  const widget = patch.widget === undefined ? null : JSON.stringify(checkWidgetPatch(patch.widget))
  const [row] = await sql<ChannelRow[]>`
    UPDATE channels SET
      name = COALESCE(${patch.name ?? null}, name),
      allowed_origins = COALESCE(${origins}::text[], allowed_origins),
      require_channel_token = COALESCE(${patch.requireChannelToken ?? null}::boolean, require_channel_token),
      active = COALESCE(${patch.active ?? null}::boolean, active),
      widget = widget || COALESCE(${widget}::jsonb, '{}'::jsonb),
      default_team_id = CASE WHEN ${patch.defaultTeamId !== undefined} THEN ${team}::uuid ELSE default_team_id END,
      -- Deactivating revokes every visitor session signed so far, for good: reactivating the
      -- channel does not bring the old epoch back (API.md section 5).
      session_epoch = session_epoch + CASE WHEN active AND ${patch.active ?? null}::boolean IS FALSE THEN 1 ELSE 0 END
    WHERE id = ${id} AND workspace_id = ${memberOf(ctx).workspaceId}
    RETURNING ${sql.unsafe(COLUMNS)}`
  if (!row) throw channelNotFound()
  ctx.channelSessions.invalidate(row.id)
  return channelView(row, true)
}

export async function rotateChannelToken(ctx: Ctx, id: string) {
  if (!isUuid(id)) throw channelNotFound()
  const { sql } = ctx
  const [row] = await sql<ChannelRow[]>`
    UPDATE channels SET channel_token = ${newChannelToken()}
    WHERE id = ${id} AND workspace_id = ${memberOf(ctx).workspaceId}
    RETURNING ${sql.unsafe(COLUMNS)}`
  if (!row) throw channelNotFound()
  return channelView(row, true)
}

/** The channel a widget names in POST /auth: unknown and inactive are the same 404. */
export async function findActiveChannel(sql: Sql, id: string): Promise<ChannelRow> {
  const [row] = await sql<ChannelRow[]>`SELECT ${sql.unsafe(COLUMNS)} FROM channels WHERE id = ${id}`
  if (!row || !row.active) throw channelNotFound()
  return row
}
