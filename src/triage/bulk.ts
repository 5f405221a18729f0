import type { BulkAction, BulkInput, BulkResultView } from '../../schemas/triage.js'
import { can, type Permission } from '../auth/permissions.js'
import { memberOf, type Ctx } from '../context.js'
import { AppError, badRequest, internalError, invalidAgent, invalidLabel, missingPermission } from '../errors.js'
import {
  assignAgent,
  closeConversation,
  deleteConversation,
  inOneTransaction,
  reopenConversation,
  setConversationTeam,
  unassignAgent,
} from '../conversations/lifecycle.js'
import { teamOfWorkspace } from '../teams/rules.js'
import { changeLabels, checkLabels } from './labels.js'
import { checkSnoozeUntil, setPriority, setWaiting } from './status.js'

/**
 * POST /conversations/bulk (API.md section 17). The action's permission is the single route's:
 * missing, the whole request is 403. Its parameters are checked once, before any conversation is
 * touched (400, nothing changed). Then each id, in the order given, goes through the very function
 * its single route calls (its own transaction, counters, analytics and conversation:updated), and
 * gets its own result row: 200 (204 for delete), or the status and code the single route would
 * have answered (404 for another workspace's, a deleted or a malformed id).
 */

const PERMISSION: Record<BulkAction, Permission> = {
  assign: 'conversations:assign',
  unassign: 'conversations:assign',
  team: 'conversations:assign',
  close: 'conversations:write',
  reopen: 'conversations:write',
  pending: 'conversations:write',
  snooze: 'conversations:write',
  priority: 'conversations:write',
  'labels:add': 'conversations:write',
  'labels:remove': 'conversations:write',
  delete: 'conversations:delete',
}

/** The parameters each action takes; any other one is a 400 (no silent extra fields). */
const PARAMS: Record<BulkAction, readonly (keyof BulkInput)[]> = {
  assign: ['agentId'],
  unassign: [],
  team: ['teamId'],
  close: [],
  reopen: [],
  pending: [],
  snooze: ['until'],
  priority: ['priority'],
  'labels:add': ['labelIds'],
  'labels:remove': ['labelIds'],
  delete: [],
}
const ALL_PARAMS = ['agentId', 'teamId', 'until', 'priority', 'labelIds'] as const

type Apply = (ctx: Ctx, id: string) => Promise<unknown>

/** Checks the action's parameters once and returns what applies it to one conversation. */
async function prepare(ctx: Ctx, input: BulkInput): Promise<Apply> {
  const me = memberOf(ctx)
  const takes = PARAMS[input.action]
  for (const p of ALL_PARAMS) {
    const given = input[p] !== undefined
    if (given && !takes.includes(p)) throw badRequest(`field '${p}' is not a parameter of the action '${input.action}'`)
    if (!given && takes.includes(p)) throw badRequest(`field '${p}' is required by the action '${input.action}'`)
  }
  switch (input.action) {
    case 'assign': {
      const agentId = input.agentId!
      const [agent] = await ctx.sql`SELECT 1 FROM members WHERE workspace_id = ${me.workspaceId} AND user_id = ${agentId} AND status = 'active'`
      if (!agent) throw invalidAgent()
      return (c, id) => assignAgent(c, id, agentId)
    }
    case 'unassign':
      return unassignAgent
    case 'team': {
      // Checked once here (400 before any row); setConversationTeam checks it again under each row's lock.
      const teamId = input.teamId === null ? null : await teamOfWorkspace(ctx.sql, me.workspaceId, input.teamId!)
      return (c, id) => setConversationTeam(c, id, teamId)
    }
    case 'close':
      return closeConversation
    case 'reopen':
      return reopenConversation
    case 'pending':
      return (c, id) => setWaiting(c, id, { status: 'PENDING' })
    case 'snooze': {
      const until = input.until ?? null
      checkSnoozeUntil(until)
      return (c, id) => setWaiting(c, id, { status: 'SNOOZED', until })
    }
    case 'priority': {
      const priority = input.priority ?? null
      return (c, id) => setPriority(c, id, priority)
    }
    case 'labels:add':
    case 'labels:remove': {
      const labelIds = await checkLabels(ctx.sql, me.workspaceId, input.labelIds!)
      if (labelIds.length === 0) throw invalidLabel("labelIds must name at least one label")
      return input.action === 'labels:add' ? (c, id) => changeLabels(c, id, { add: labelIds }) : (c, id) => changeLabels(c, id, { remove: labelIds })
    }
    case 'delete':
      return deleteConversation
  }
}

export async function bulkAction(ctx: Ctx, input: BulkInput): Promise<BulkResultView> {
  const me = memberOf(ctx)
  const permission = PERMISSION[input.action]
  if (!can(me.role, permission)) throw missingPermission(permission)
  const apply = await prepare(ctx, input)
  try {
    // One transaction for the whole request (src/conversations/batch.ts): each id still through
    // its single route's function.
    return await inOneTransaction(ctx, input.ids, (batchCtx) => applyEach(batchCtx, input, apply, true))
  } catch (err) {
    // Nothing of it committed (a change that failed after it may have written, a deadlock, a lost
    // connection): each id on its own, as separate single requests would be.
    ctx.log.warn({ err }, 'bulk action: the one transaction failed; applying each conversation in a transaction of its own')
    return applyEach(ctx, input, apply, false)
  }
}

/**
 * Each id in order, its own result row: 200 (204 for delete), or the status and code the single
 * route would answer. An unexpected failure is a 500 row when each id runs on its own; inside the
 * one transaction, any failure but a conversation not found (BatchAborted or worse) fails the
 * whole, and bulkAction runs each on its own.
 */
async function applyEach(ctx: Ctx, input: BulkInput, apply: Apply, batched: boolean): Promise<BulkResultView> {
  const ok = input.action === 'delete' ? 204 : 200
  const results: BulkResultView['results'] = []
  for (const id of input.ids) {
    try {
      await apply(ctx, id.toLowerCase())
      results.push({ id, statusCode: ok })
    } catch (err) {
      if (!(err instanceof AppError)) {
        if (batched) throw err
        // What the single route would answer as a 500; the others still run, as separate calls would.
        ctx.log.error({ err, conversationId: id }, 'bulk action failed on one conversation')
        const failure = internalError('')
        results.push({ id, statusCode: failure.statusCode, code: failure.code })
        continue
      }
      results.push({ id, statusCode: err.statusCode, code: err.code })
    }
  }
  return { results }
}
