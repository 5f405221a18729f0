import { v7 as uuidv7 } from 'uuid'
import type { CreateLabelInput, LabelView, UpdateLabelInput } from '../../schemas/triage.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import { invalidLabel, labelNameTaken, labelNotFound, tooManyLabels } from '../errors.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { mutateConversation, updateRow } from '../conversations/lifecycle.js'

/**
 * Labels (API.md section 17). A conversation holds its labels' ids in `conversations.label_ids`
 * (GIN-indexed for the `labelIds` filter); the names and colours are joined at read
 * (src/conversations/view.ts), so a rename shows everywhere at once.
 */

export const LABELS_PER_WORKSPACE = 500
export const LABELS_PER_CONVERSATION = 20

const COLUMNS = `id, name, color, description, created_at AS "createdAt"`
type LabelRecord = Omit<LabelView, 'createdAt'> & { createdAt: string }
const toView = (r: LabelRecord): LabelView => ({ ...r, createdAt: iso(r.createdAt) })

const isUniqueViolation = (err: unknown) => (err as { code?: string } | undefined)?.code === '23505'

/** GET /labels: the workspace's labels by name (at most 500, so one page). */
export async function listLabels(ctx: Ctx): Promise<{ data: LabelView[] }> {
  const { workspaceId } = memberOf(ctx)
  const rows = await ctx.sql<LabelRecord[]>`
    SELECT ${ctx.sql.unsafe(COLUMNS)} FROM labels WHERE workspace_id = ${workspaceId} ORDER BY lower(name), id`
  return { data: rows.map(toView) }
}

/**
 * POST /labels. The cap is a count about data, checked under a per-workspace advisory lock so two
 * concurrent creates cannot both take the 500th place.
 */
export async function createLabel(ctx: Ctx, input: CreateLabelInput): Promise<LabelView> {
  const { workspaceId } = memberOf(ctx)
  try {
    return await ctx.sql.begin(async (sql) => {
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`parley:labels:${workspaceId}`}, 0))`
      const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM labels WHERE workspace_id = ${workspaceId}`
      if (n >= LABELS_PER_WORKSPACE) throw tooManyLabels(LABELS_PER_WORKSPACE)
      const [row] = await sql<LabelRecord[]>`
        INSERT INTO labels (id, workspace_id, name, color, description)
        VALUES (${uuidv7()}, ${workspaceId}, ${input.name}, ${input.color.toLowerCase()}, ${input.description ?? ''})
        RETURNING ${sql.unsafe(COLUMNS)}`
      return toView(row)
    })
  } catch (err) {
    if (isUniqueViolation(err)) throw labelNameTaken()
    throw err
  }
}

/** PATCH /labels/:id. */
export async function updateLabel(ctx: Ctx, id: string, patch: UpdateLabelInput): Promise<LabelView> {
  const { workspaceId } = memberOf(ctx)
  if (!isUuid(id)) throw labelNotFound()
  try {
    const [row] = await ctx.sql<LabelRecord[]>`
      UPDATE labels SET
        name = COALESCE(${patch.name ?? null}, name),
        color = COALESCE(${patch.color?.toLowerCase() ?? null}, color),
        description = COALESCE(${patch.description ?? null}, description),
        updated_at = clock_timestamp()
      WHERE id = ${id} AND workspace_id = ${workspaceId}
      RETURNING ${ctx.sql.unsafe(COLUMNS)}`
    if (!row) throw labelNotFound()
    return toView(row)
  } catch (err) {
    if (isUniqueViolation(err)) throw labelNameTaken()
    throw err
  }
}

/**
 * DELETE /labels/:id: the label and its place on every conversation (GIN index), in one
 * transaction. Conversations that lose it are not "updated" (no updatedAt, no event): the label
 * list of each is read at display time, and a filter by the deleted id matches nothing.
 */
export async function deleteLabel(ctx: Ctx, id: string): Promise<void> {
  const { workspaceId } = memberOf(ctx)
  if (!isUuid(id)) throw labelNotFound()
  await ctx.sql.begin(async (sql) => {
    const [row] = await sql`DELETE FROM labels WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`
    if (!row) throw labelNotFound()
    // Writers of label_ids hold the label rows FOR KEY SHARE (checkLabels) until they commit, so
    // this statement, which starts after the DELETE got its lock, sees every row that holds it.
    await sql`
      UPDATE conversations SET label_ids = array_remove(label_ids, ${id}::uuid)
      WHERE workspace_id = ${workspaceId} AND label_ids @> ARRAY[${id}::uuid] AND deleted_at IS NULL`
  })
}

/**
 * The distinct label ids, each a label of the workspace, else 400 INVALID_LABEL. Locks the label
 * rows (FOR KEY SHARE) until the caller's transaction ends, so a concurrent delete of one of them
 * waits and then removes it from what this transaction wrote.
 */
export async function checkLabels(sql: Sql, workspaceId: string, ids: string[], max = LABELS_PER_CONVERSATION): Promise<string[]> {
  const lower = ids.map((id) => id.toLowerCase())
  const unique = [...new Set(lower)]
  if (unique.length !== lower.length) throw invalidLabel('labelIds must not repeat a label')
  if (unique.length > max) throw invalidLabel(`labelIds may name at most ${max} labels`)
  if (!unique.every(isUuid)) throw invalidLabel('labelIds must name labels of this workspace')
  if (unique.length === 0) return unique
  const rows = await sql<{ id: string }[]>`
    SELECT id FROM labels WHERE workspace_id = ${workspaceId} AND id = ANY(${unique}::uuid[]) FOR KEY SHARE`
  if (rows.length !== unique.length) throw invalidLabel('labelIds must name labels of this workspace')
  return unique
}

/** Format and distinctness only (a bulk request's parameters, checked once before any row). */
export function checkLabelIdsShape(ids: string[]): void {
  const lower = ids.map((id) => id.toLowerCase())
  if (new Set(lower).size !== lower.length) throw invalidLabel('labelIds must not repeat a label')
  if (lower.length > LABELS_PER_CONVERSATION) throw invalidLabel(`labelIds may name at most ${LABELS_PER_CONVERSATION} labels`)
  if (!lower.every(isUuid)) throw invalidLabel('labelIds must name labels of this workspace')
}

export type LabelChange = { set: string[] } | { add: string[] } | { remove: string[] }

/**
 * PUT /conversations/:id/labels (`set`) and the bulk `labels:add` / `labels:remove`: under the
 * conversation's row lock. The result may hold at most 20 labels (else INVALID_LABEL). An
 * unchanged set changes nothing (no updatedAt, no event).
 */
export async function changeLabels(ctx: Ctx, id: string, change: LabelChange) {
  return mutateConversation(ctx, id, async (sql, row) => {
    const [cur] = await sql<{ labelIds: string[] }[]>`SELECT label_ids::text[] AS "labelIds" FROM conversations WHERE id = ${id}`
    const current = cur.labelIds
    let next: string[]
    if ('set' in change) next = await checkLabels(sql, row.workspaceId, change.set)
    else if ('add' in change) {
      const adding = await checkLabels(sql, row.workspaceId, change.add)
      next = [...current, ...adding.filter((l) => !current.includes(l))]
      if (next.length > LABELS_PER_CONVERSATION) throw invalidLabel(`a conversation holds at most ${LABELS_PER_CONVERSATION} labels`)
    } else {
      checkLabelIdsShape(change.remove)
      const removing = new Set(change.remove.map((l) => l.toLowerCase()))
      next = current.filter((l) => !removing.has(l))
    }
    const same = next.length === current.length && [...next].sort().join() === [...current].sort().join()
    if (same) return {}
    return { after: await updateRow(sql, id, sql`label_ids = ${next}::uuid[]`) }
  })
}
