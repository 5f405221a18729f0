import { v7 as uuidv7 } from 'uuid'
import type { CannedListQueryInput, CannedView, CreateCannedInput, RenderResultView, UpdateCannedInput } from '../../schemas/canned.js'
import { can } from '../auth/permissions.js'
import { memberOf, type Ctx } from '../context.js'
import { keysetPage, type Page } from '../cursor.js'
import type { Sql } from '../db/client.js'
import type { CannedScope } from '../db/schema.js'
import { cannedNotFound, conversationNotFound, forbidden, invalidChannel, shortcutTaken } from '../errors.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { renderTemplate } from './render.js'

/**
 * Canned responses (API.md section 11). A member sees the workspace's responses and its own
 * personal ones; another member's personal response does not exist for it (404). Personal ones
 * are managed by their owner, workspace ones by `canned:manage`.
 */

const COLUMNS = `
  id, shortcut, title, body, scope, owner_id AS "ownerId", channel_ids::text[] AS "channelIds",
  usage_count AS "usageCount", created_at AS "createdAt", updated_at AS "updatedAt"`

type CannedRecord = Omit<CannedView, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }

const toView = (r: CannedRecord): CannedView => ({ ...r, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) })

/** The shortcut alphabet ([a-z0-9_-]): only such a q can match a shortcut. */
const SHORTCUT_TEXT = /^[a-z0-9_-]+$/
/** Above every shortcut character in byte order: [q, q + '~') is exactly "starts with q". */
const PREFIX_END = '~'

/** A group's order, exactly as canned_usage_idx stores it (drizzle writes DESC NULLS LAST), so the index can serve it. */
const GROUP_ORDER = 'usage_count DESC NULLS LAST, created_at DESC NULLS LAST, id DESC NULLS LAST'

const likeEscape = (s: string) => s.replace(/[\\%_]/g, '\\$&')

/** Who may change a response: its owner (personal) or canned:manage (workspace). */
function mayManage(ctx: Ctx, scope: CannedScope, ownerId: string): boolean {
  const me = memberOf(ctx)
  return scope === 'personal' ? ownerId === me.userId : can(me.role, 'canned:manage')
}

/** The distinct channel ids, each one of this workspace's (else 400 INVALID_CHANNEL). */
async function checkChannels(sql: Sql, workspaceId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids.map((id) => id.toLowerCase()))]
  if (unique.length === 0) return unique
  const rows = await sql<{ id: string }[]>`SELECT id FROM channels WHERE workspace_id = ${workspaceId} AND id = ANY(${unique}::uuid[])`
  if (rows.length !== unique.length) throw invalidChannel()
  return unique
}

/** The response `id` as the caller may see it, optionally locked for a change; else 404. */
async function findVisible(sql: Sql, ctx: Ctx, id: string, lock = false): Promise<CannedRecord> {
  if (!isUuid(id)) throw cannedNotFound()
  const me = memberOf(ctx)
  const [row] = await sql<CannedRecord[]>`
    SELECT ${sql.unsafe(COLUMNS)} FROM canned_responses
    WHERE id = ${id} AND workspace_id = ${me.workspaceId} AND (scope = 'workspace' OR owner_id = ${me.userId})
    ${lock ? sql`FOR UPDATE` : sql``}`
  if (!row) throw cannedNotFound()
  return row
}

/** POST /canned-responses. A clash with a shortcut of the same scope (and owner, if personal): 409 SHORTCUT_TAKEN. */
export async function createCanned(ctx: Ctx, input: CreateCannedInput): Promise<CannedView> {
  const me = memberOf(ctx)
  if (input.scope === 'workspace' && !can(me.role, 'canned:manage')) throw forbidden('Missing permission canned:manage')
  return ctx.sql.begin(async (sql) => {
    const channels = await checkChannels(sql, me.workspaceId, input.channelIds ?? [])
    const [row] = await sql<CannedRecord[]>`
      INSERT INTO canned_responses (id, workspace_id, scope, owner_id, shortcut, title, body, channel_ids)
      VALUES (${uuidv7()}, ${me.workspaceId}, ${input.scope}, ${me.userId}, ${input.shortcut}, ${input.title ?? ''}, ${input.body}, ${channels}::uuid[])
      ON CONFLICT DO NOTHING
      RETURNING ${sql.unsafe(COLUMNS)}`
    if (!row) throw shortcutTaken()
    return toView(row)
  })
}

/** PATCH /canned-responses/:id. */
export async function updateCanned(ctx: Ctx, id: string, patch: UpdateCannedInput): Promise<CannedView> {
  const me = memberOf(ctx)
  return ctx.sql.begin(async (sql) => {
    const current = await findVisible(sql, ctx, id, true)
    if (!mayManage(ctx, current.scope, current.ownerId)) throw forbidden('Missing permission canned:manage')
    const channels = patch.channelIds === undefined ? current.channelIds : await checkChannels(sql, me.workspaceId, patch.channelIds)
    const [row] = await sql<CannedRecord[]>`
      UPDATE canned_responses SET
        shortcut = ${patch.shortcut ?? current.shortcut},
        title = ${patch.title ?? current.title},
        body = ${patch.body ?? current.body},
        channel_ids = ${channels}::uuid[],
        updated_at = clock_timestamp()
      WHERE id = ${current.id}
        AND NOT EXISTS (
          SELECT 1 FROM canned_responses o
          WHERE o.workspace_id = ${me.workspaceId} AND o.id <> ${current.id} AND o.shortcut = ${patch.shortcut ?? current.shortcut}
            AND o.scope = ${current.scope} AND (o.scope = 'workspace' OR o.owner_id = ${current.ownerId}))
      RETURNING ${sql.unsafe(COLUMNS)}`
    if (!row) throw shortcutTaken()
    return toView(row)
  }).catch((err: unknown) => {
    // Two renames to one shortcut at once: the unique index decides, the loser gets the same 409.
    if ((err as { code?: string }).code === '23505') throw shortcutTaken()
    throw err
  })
}

/** DELETE /canned-responses/:id. */
export async function deleteCanned(ctx: Ctx, id: string): Promise<void> {
  await ctx.sql.begin(async (sql) => {
    const current = await findVisible(sql, ctx, id, true)
    if (!mayManage(ctx, current.scope, current.ownerId)) throw forbidden('Missing permission canned:manage')
    await sql`DELETE FROM canned_responses WHERE id = ${current.id}`
  })
}

/**
 * POST /canned-responses/:id/render: the body with the conversation's values filled in, and one
 * more use counted (an atomic increment: concurrent renders all count). A response limited to
 * other channels still renders: the limit is the picker's.
 */
export async function renderCanned(ctx: Ctx, id: string, input: { conversationId: string }): Promise<RenderResultView> {
  const me = memberOf(ctx)
  if (!isUuid(id)) throw cannedNotFound()
  const { sql } = ctx
  const [conv] = isUuid(input.conversationId)
    ? await sql<{ id: string; guestName: string; guestEmail: string; channelName: string }[]>`
        SELECT c.id, g.name AS "guestName", g.email AS "guestEmail", ch.name AS "channelName"
        FROM conversations c JOIN guests g ON g.id = c.guest_id JOIN channels ch ON ch.id = c.channel_id
        WHERE c.id = ${input.conversationId} AND c.workspace_id = ${me.workspaceId} AND c.deleted_at IS NULL`
    : []
  const [canned] = await sql<{ body: string }[]>`
    UPDATE canned_responses SET usage_count = usage_count + 1
    WHERE id = ${id} AND workspace_id = ${me.workspaceId} AND (scope = 'workspace' OR owner_id = ${me.userId})
      AND ${conv !== undefined}
    RETURNING body`
  if (!canned) {
    // Which one is missing, without having counted a use.
    await findVisible(sql, ctx, id)
    throw conversationNotFound()
  }
  return renderTemplate(canned.body, {
    'visitor.name': conv!.guestName,
    'visitor.email': conv!.guestEmail,
    'agent.name': me.name,
    'channel.name': conv!.channelName,
    'conversation.id': conv!.id,
  })
}

/**
 * GET /canned-responses. Without q: by shortcut (then id), a plain keyset over canned_list_idx.
 * With q, the / picker: shortcut prefix matches, then other shortcut substring matches, then title
 * or body substring matches (case-insensitive: `haystack` is title and body lower-cased at write),
 * each group by usageCount then newest createdAt.
 * Each group is its own branch with its own LIMIT, served by an index: the prefix by a range of
 * canned_list_idx (shortcuts are byte-ordered), substrings of 3+ characters by the trigram GIN
 * indexes, shorter ones by walking canned_usage_idx in the group's order until the page is full.
 * The statement is planned per call (an unnamed statement), so the planner sees the pattern.
 * The cursor carries (group, usageCount, createdAt, id); a use counted while paging may move a
 * response between pages (the picker reads its first page).
 */
export async function listCanned(ctx: Ctx, query: CannedListQueryInput): Promise<Page<CannedView>> {
  const me = memberOf(ctx)
  const params = { list: 'canned', q: query.q ?? null, scope: query.scope ?? null, channelId: query.channelId?.toLowerCase() ?? null }
  const values: (string | number)[] = []
  const bind = (v: string | number) => {
    values.push(v)
    return `$${values.length}`
  }
  // Every value bound here is used by the statement: a parameter no statement uses has no type.
  const WS = bind(me.workspaceId)
  const ME = () => bind(me.userId)
  const common = [
    `workspace_id = ${WS}`,
    query.scope === 'workspace' ? `scope = 'workspace'` : query.scope === 'personal' ? `scope = 'personal' AND owner_id = ${ME()}` : `(scope = 'workspace' OR owner_id = ${ME()})`,
    ...(query.channelId ? [`(cardinality(channel_ids) = 0 OR ${bind(query.channelId.toLowerCase())}::uuid = ANY(channel_ids))`] : []),
  ]

  if (query.q === undefined) {
    const page = await keysetPage(ctx, {
      cursor: query.cursor,
      params,
      key: ['text', 'uuid'],
      limit: query.limit,
      fetch: (after, take) =>
        ctx.sql.unsafe<CannedRecord[]>(
          `SELECT ${COLUMNS} FROM canned_responses WHERE ${common.join(' AND ')}
            ${after ? `AND (shortcut, id) > (${bind(after[0])}, ${bind(after[1])}::uuid)` : ''}
          ORDER BY shortcut, id LIMIT ${take}`,
          values,
        ),
      keyOf: (r) => [r.shortcut, r.id],
    })
    return { data: page.data.map(toView), nextCursor: page.nextCursor }
  }

  const page = await keysetPage(ctx, {
    cursor: query.cursor,
    params,
    key: ['int', 'int', 'timestamp', 'uuid'],
    limit: query.limit,
    fetch: async (key, take) => {
      const from = key && { group: key[0], usage: key[1], createdAt: key[2], id: key[3] }
      const q = query.q!.toLowerCase()
      const shortcutLike = SHORTCUT_TEXT.test(q)
      // Only the branches this page needs are bound: a parameter no statement uses has no type.
      const groups: ((sub: () => string) => string)[] = []
      if (shortcutLike) {
        const prefix = () => `shortcut >= ${bind(q)} AND shortcut < ${bind(q + PREFIX_END)}`
        groups[0] = () => prefix()
        groups[1] = (sub) => `shortcut LIKE ${sub()} AND NOT (${prefix()})`
        groups[2] = (sub) => `haystack LIKE ${hay()} AND shortcut NOT LIKE ${sub()}`
      } else {
        groups[2] = () => `haystack LIKE ${hay()}`
      }
      let sub: string | undefined
      const SUB = () => (sub ??= bind(`%${likeEscape(q)}%`))
      // Lower-cased by PostgreSQL, as the haystack column is; constant-folded, so the planner sees it.
      let hayPattern: string | undefined
      const hay = () => (hayPattern ??= `('%' || lower(${bind(likeEscape(query.q!))}) || '%')`)
      const branches: string[] = []
      groups.forEach((cond, group) => {
        if (from && group < from.group) return
        const where = cond(SUB)
        const keyset = from && group === from.group
          ? `AND (usage_count, created_at, id) < (${bind(from.usage)}::int, ${bind(from.createdAt)}::timestamptz, ${bind(from.id)}::uuid)`
          : ''
        branches.push(`(SELECT ${group} AS grp, ${COLUMNS} FROM canned_responses
          WHERE ${common.join(' AND ')} AND ${where} ${keyset}
          ORDER BY ${GROUP_ORDER} LIMIT ${take})`)
      })
      return branches.length
        ? ctx.sql.unsafe<(CannedRecord & { grp: number })[]>(
            `SELECT * FROM (${branches.join(' UNION ALL ')}) x ORDER BY grp, "usageCount" DESC, "createdAt" DESC, id DESC LIMIT ${take}`,
            values,
          )
        : []
    },
    keyOf: (r) => [r.grp, r.usageCount, r.createdAt, r.id],
  })
  return { data: page.data.map(({ grp: _, ...r }) => toView(r)), nextCursor: page.nextCursor }
}
