import { randomBytes, randomUUID } from 'node:crypto'
import type { ChannelView, EmailCreateInput, EmailPatchInput, EmailSettings, WidgetPatchInput } from '../../schemas/channels.js'
import { can } from '../auth/permissions.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { ChannelKind, channels } from '../db/schema.js'
import { badRequest, channelNotFound } from '../errors.js'
import { encryptSecret, requireChannelSecretKey } from '../email/secrets.js'
import { emailView, patchedOf, storedOf } from '../email/settings.js'
import { teamOfWorkspace } from '../teams/rules.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { checkWidgetPatch, widgetSettings } from '../support/widget-settings.js'

/** A channel's columns, the e-mail passwords apart (they are read by src/email/secrets.ts only). */
export type ChannelRow = Omit<typeof channels.$inferSelect, 'emailImapPassword' | 'emailSmtpPassword'>

/** Every column of ChannelRow, aliased: the fixed list this module passes to sql.unsafe. */
const COLUMNS = `id, workspace_id AS "workspaceId", name, kind, active, allowed_origins AS "allowedOrigins",
  require_channel_token AS "requireChannelToken", channel_token AS "channelToken",
  identity_secret AS "identitySecret", session_epoch AS "sessionEpoch", widget, default_team_id AS "defaultTeamId",
  email, email_state AS "emailState", email_error AS "emailError", email_last_sync_at AS "emailLastSyncAt", created_at AS "createdAt"`

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
    ...(row.kind === 'email' ? { email: emailView(row) } : {}),
    createdAt: iso(row.createdAt),
  }
}

export async function createChannel(
  ctx: Ctx,
  input: { name: string; kind?: ChannelKind; allowedOrigins?: string[]; requireChannelToken?: boolean; email?: EmailCreateInput },
) {
  const { sql } = ctx
  const kind = input.kind ?? 'web'
  if (kind === 'email' && !input.email) throw badRequest("field 'email' is required with kind \"email\"")
  if (kind === 'web' && input.email) throw badRequest("field 'email' is only for kind \"email\"")
  const id = randomUUID()
  let email: { stored: EmailSettings; imap: string; smtp: string } | null = null
  if (input.email) {
    // The passwords are bound to this channel's id (src/email/secrets.ts).
    const key = requireChannelSecretKey(ctx.config)
    email = {
      stored: storedOf(input.email),
      imap: encryptSecret(key, id, 'imap', input.email.imap.password),
      smtp: encryptSecret(key, id, 'smtp', input.email.smtp.password),
    }
  }
  const [row] = await sql<ChannelRow[]>`
    INSERT INTO channels (id, workspace_id, name, kind, allowed_origins, require_channel_token, channel_token, identity_secret,
                          email, email_imap_password, email_smtp_password, email_state)
    VALUES (${id}, ${memberOf(ctx).workspaceId}, ${input.name}, ${kind}, ${normalizeOrigins(input.allowedOrigins ?? [])}::text[],
            ${input.requireChannelToken ?? false}, ${newChannelToken()}, ${newIdentitySecret()},
            ${email ? JSON.stringify(email.stored) : null}::jsonb, ${email?.imap ?? null}, ${email?.smtp ?? null},
            ${email ? 'ok' : null})
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
  patch: {
    name?: string
    allowedOrigins?: string[]
    requireChannelToken?: boolean
    active?: boolean
    widget?: WidgetPatchInput
    defaultTeamId?: string | null
    email?: EmailPatchInput
  },
) {
  if (!isUuid(id)) throw channelNotFound()
  if (patch.email === undefined) return applyUpdate(ctx, ctx.sql, id, patch, null)
  const emailPatch = patch.email
  return ctx.sql.begin(async (tx) => {
    // The e-mail settings are merged under the row lock: two PATCHes naming different fields both apply.
    const [cur] = await tx<{ kind: ChannelKind; email: EmailSettings | null }[]>`
      SELECT kind, email FROM channels WHERE id = ${id} AND workspace_id = ${memberOf(ctx).workspaceId} FOR UPDATE`
    if (!cur) throw channelNotFound()
    if (cur.kind !== 'email' || !cur.email) throw badRequest("field 'email' is only for e-mail channels (kind is fixed at creation)")
    const key = requireChannelSecretKey(ctx.config)
    return applyUpdate(ctx, tx, id, patch, {
      stored: patchedOf(cur.email, emailPatch),
      imap: emailPatch.imap?.password === undefined ? null : encryptSecret(key, id, 'imap', emailPatch.imap.password),
      smtp: emailPatch.smtp?.password === undefined ? null : encryptSecret(key, id, 'smtp', emailPatch.smtp.password),
    })
  })
}

/** The UPDATE of updateChannel; `email`: the merged settings and the new passwords (null: kept). */
async function applyUpdate(
  ctx: Ctx,
  sql: Sql,
  id: string,
  patch: { name?: string; allowedOrigins?: string[]; requireChannelToken?: boolean; active?: boolean; widget?: WidgetPatchInput; defaultTeamId?: string | null },
  email: { stored: EmailSettings; imap: string | null; smtp: string | null } | null,
) {
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
      email = COALESCE(${email ? JSON.stringify(email.stored) : null}::jsonb, email),
      email_imap_password = COALESCE(${email?.imap ?? null}, email_imap_password),
      email_smtp_password = COALESCE(${email?.smtp ?? null}, email_smtp_password),
      -- New settings: the last check's or sync's verdict was about the old ones.
      email_state = CASE WHEN ${email !== null} THEN 'ok' ELSE email_state END,
      email_error = CASE WHEN ${email !== null} THEN NULL ELSE email_error END,
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
