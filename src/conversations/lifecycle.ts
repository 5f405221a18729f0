import { v7 as uuidv7 } from 'uuid'
import { memberOf, visitorOf, workspaceOf, type Ctx } from '../context.js'
import type { Fragment, Sql } from '../db/client.js'
import type { ConversationView, HistoryEntryView } from '../../schemas/conversations.js'
import type { conversations } from '../db/schema.js'
import { conversationNotFound, forbidden, guestNotFound, invalidAgent, tooManyOpenConversations } from '../errors.js'
import { rooms } from '../events.js'
import { iso } from '../time.js'
import { removeConversationMentions } from '../mentions/mentions.js'
import { isUuid } from '../uuid.js'
import { deferRollups, flushRollups, forgetConversation, recordCreated, recordReopened, recordResolved, type MetricConversation, type RolledEvent } from '../analytics/record.js'
import { findConversationForCaller } from './access.js'
import { addHistory } from './history.js'
import { audienceOf, conversationFor, conversationRooms, conversationVisibleTo, type MembersRooms } from './visibility.js'
import { afterUnassign, queueOnReopen, queueOnTeamChange, recordAssignedFromQueue, teamOfWorkspace } from '../teams/rules.js'
import { queueOf } from '../teams/queue.js'
import { slaAfterChange, slaAfterChanges, slaOnCreate, type SlaBreach } from '../sla/sync.js'
import { publishBreaches } from '../sla/breaches.js'
import { addToBatch, BatchAborted, type ConversationBatch } from './batch.js'
import { applyCountersDelta, countersDelta, lockCountersShared, type CountersDelta, type CounterState } from './counters.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, findConversationView, toConversationView, type ConversationRecord } from './view.js'

/** The locked conversation row, as the rules need it (its analytics state included). */
export type LockedConversation = CounterState &
  MetricConversation &
  Pick<
    typeof conversations.$inferSelect,
    'id' | 'workspaceId' | 'channelId' | 'guestId' | 'pinned' | 'lastMessageAt' | 'agentLastSeenAt' | 'teamId' | 'queuedAt' | 'priority' | 'slaPolicyId'
  >

const LOCK_COLUMNS = `
  id, workspace_id AS "workspaceId", channel_id AS "channelId", guest_id AS "guestId", status, pinned,
  assigned_agent_id AS "assignedAgentId", unread_count AS "unreadCount", deleted_at IS NOT NULL AS deleted,
  last_message_at AS "lastMessageAt", agent_last_seen_at AS "agentLastSeenAt",
  cycle, COALESCE(cycle_started_at, created_at) AS "cycleStartedAt", awaiting_reply AS "awaitingReply",
  public_messages AS "publicMessages", team_id AS "teamId", queued_at AS "queuedAt",
  priority, sla_policy_id AS "slaPolicyId"`

/** The view of a conversation this transaction has just locked and changed (or created). */
async function viewAfterChange(sql: Sql, id: string): Promise<ConversationView> {
  const view = await findConversationView(sql, id)
  if (!view) throw conversationNotFound()
  return view
}

/** GET /conversations/:id: visible to a member of its workspace or to its own visitor. */
export async function getConversation(ctx: Ctx, id: string): Promise<ConversationView> {
  if (!isUuid(id)) throw conversationNotFound()
  const { sql } = ctx
  const [row] = await sql<ConversationRecord[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)} FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.id = ${id} AND ${conversationVisibleTo(sql, ctx.caller, 'c')}`
  if (!row) throw conversationNotFound()
  const view = conversationFor(toConversationView(row), audienceOf(ctx.caller))
  return { ...view, queue: await queueOf(sql, view) }
}

export interface Mutation<T = undefined> {
  /** The updated row's counter state; undefined: nothing changed (no counters, no event). */
  after?: CounterState
  /** Extra result of the operation (e.g. the message created). */
  result?: T
  /** Publish conversation:updated after commit (default: when `after` is set). */
  publishUpdate?: boolean
  /** After commit, offer these teams' queues, and every team of these members, to routing (docs/routing.md). */
  route?: { teams?: (string | null)[]; members?: (string | null)[] }
}

export interface MutationOutcome<T> {
  conversation: ConversationView
  changed: boolean
  result?: T
}

/**
 * A change made by the system (a job, the snooze sweep) rather than a member or visitor: the
 * workspace is named, and `skipLocked` treats a row another transaction holds as not found (the
 * sweep leaves it to whoever holds it).
 */
export interface SystemMutation {
  workspaceId: string
  skipLocked?: boolean
}

/**
 * The one way to change a conversation: in one transaction, take the workspace's counter lock
 * (shared), lock the row the caller may see (FOR UPDATE), run `change`, apply the counter delta
 * between the locked and the updated row, read the view; after commit, publish.
 *
 * Inside a batch (`ctx.batch`, a bulk request: src/conversations/batch.ts) the same steps run in
 * the batch's one transaction: the counter delta and the analytics rollups are added to the
 * batch's, which applies them before its commit, and the publishing waits for that commit. Every
 * effect of the change is the same. A failure of `change` there aborts the whole batch
 * (BatchAborted); a conversation the caller may not see is its usual 404.
 */
export async function mutateConversation<T = undefined>(
  ctx: Ctx,
  id: string,
  change: (sql: Sql, row: LockedConversation) => Promise<Mutation<T>>,
  system?: SystemMutation,
): Promise<MutationOutcome<T>> {
  if (!isUuid(id)) throw conversationNotFound()
  const ws = system?.workspaceId ?? workspaceOf(ctx)
  const batch = ctx.batch?.workspaceId === ws ? ctx.batch : undefined
  let out: Changed<T>
  if (batch) {
    out = await changeLocked(ctx, batch.tx, ws, id, change, system, batch)
    addToBatch(batch, out.delta)
    batch.after.push(() => afterChange(ctx, out, batch.membersRooms))
  } else {
    out = await ctx.sql.begin(async (sql) => {
      await lockCountersShared(sql, ws)
      const changed = await changeLocked(ctx, sql, ws, id, change, system)
      await applyCountersDelta(sql, ws, changed.delta)
      return changed
    })
    await afterChange(ctx, out)
  }
  // null after a delete, whose caller answers 204 without it, and inside a batch (its view is
  // read later, with the others: a bulk answers result rows, not conversations).
  const conversation = out.conversation && conversationFor(out.conversation, audienceOf(ctx.caller))
  return { conversation: conversation as ConversationView, changed: out.m.after !== undefined, result: out.m.result }
}

/** What a change did inside its transaction: the locked row, the mutation, the counter delta, the view after it (null: deleted; undefined: still to be read, in a batch). */
interface Changed<T> {
  row: LockedConversation
  m: Mutation<T>
  delta: CountersDelta
  conversation?: ConversationView | null
  /** Breaches recorded by this change (a reply after a due time), sent as sla:breached after commit. */
  breaches: SlaBreach[]
}

/** Inside the transaction: lock the row the caller may see, run `change`, compute the counter delta, read the view. */
async function changeLocked<T>(
  ctx: Ctx,
  sql: Sql,
  ws: string,
  id: string,
  change: (sql: Sql, row: LockedConversation) => Promise<Mutation<T>>,
  system?: SystemMutation,
  batch?: ConversationBatch,
): Promise<Changed<T>> {
  // In a batch: a conversation changed before in it has its service levels and its view brought
  // up to date first (its events show the state after that change, and this change's SLA step
  // compares with it); a row locked at the start is not looked up again.
  if (batch?.pending.some((p) => p.row.id === id) || batch?.sla.some((p) => p.before.id === id)) await flushPending(batch)
  let row = batch?.locked.get(id)
  if (row) batch!.locked.delete(id)
  else {
    ;[row] = await sql<LockedConversation[]>`
      SELECT ${sql.unsafe(LOCK_COLUMNS)} FROM conversations
      WHERE id = ${id} AND ${system ? sql`workspace_id = ${ws} AND deleted_at IS NULL` : conversationVisibleTo(sql, ctx.caller)}
      FOR UPDATE ${system?.skipLocked ? sql`SKIP LOCKED` : sql``}`
  }
  // Nothing written yet: a batch goes on without this conversation.
  if (!row) throw conversationNotFound()
  try {
    const m = await change(sql, row)
    const delta = m.after ? countersDelta(row, m.after) : new Map()
    if (!batch) {
      // Service levels follow every change: status log, matching, targets (src/sla/sync.ts).
      const breaches = m.after ? await slaAfterChange(sql, row, m.after.deleted) : []
      return { row, m, delta, conversation: m.after?.deleted ? null : await viewAfterChange(sql, id), breaches }
    }
    // In a batch, the same SLA step runs for all its changes at once before the views are read
    // (flushPending): a few statements per batch instead of about eleven per conversation.
    const out: Changed<T> = { row, m, delta, breaches: [] }
    if (m.after) batch.sla.push({ before: { ...row }, deleted: m.after.deleted, breaches: out.breaches })
    if (m.after?.deleted) return { ...out, conversation: null }
    batch.pending.push(out)
    return out
  } catch (err) {
    // It may have written: a batch's transaction must not commit (src/conversations/batch.ts).
    throw batch ? new BatchAborted(err) : err
  }
}

/**
 * The batch's deferred work, in the order of a single change: the SLA step of the changes that
 * have not had it (slaAfterChanges, their breaches added to each change's), then the views of
 * those that have none yet, in one statement.
 */
async function flushPending(batch: ConversationBatch): Promise<void> {
  const sla = batch.sla.splice(0)
  if (sla.length > 0) {
    const breaches = await slaAfterChanges(batch.tx, sla)
    sla.forEach((p, i) => p.breaches.push(...breaches[i]))
  }
  const pending = batch.pending.splice(0)
  if (pending.length === 0) return
  const { tx } = batch
  const rows = await tx<ConversationRecord[]>`
    SELECT ${tx.unsafe(CONVERSATION_SELECT)} FROM ${tx.unsafe(CONVERSATION_FROM)}
    WHERE c.id = ANY(${[...new Set(pending.map((p) => p.row.id))]}::uuid[]) AND c.deleted_at IS NULL`
  const views = new Map(rows.map((r) => [r.id, toConversationView(r)]))
  for (const p of pending) p.conversation = views.get(p.row.id) ?? null
}

/**
 * Many conversations' changes in one transaction (a bulk request; src/conversations/batch.ts):
 * `run` gets a context whose conversation changes (each through mutateConversation) join it.
 * Before the commit, the SLA step, the views, the analytics rollups and the counter deltas run once;
 * after it, each change's after-commit work runs, in order. Throws when the transaction as a
 * whole fails (nothing of it committed): the caller may then apply the changes one by one.
 * Errors of the after-commit work are logged, never thrown: the changes are made. `system`: the
 * workspace of a system caller's batch (no conversations locked at the start: pass no ids).
 */
export async function inOneTransaction<T>(ctx: Ctx, ids: string[], run: (batchCtx: Ctx) => Promise<T>, system?: SystemMutation): Promise<T> {
  // A system caller (the mailbox reader's batch of mails, src/email/inbound.ts) names the workspace.
  const workspaceId = system?.workspaceId ?? memberOf(ctx).workspaceId
  const after: (() => Promise<void>)[] = []
  let result: T | undefined
  await ctx.sql.begin(async (tx) => {
    await lockCountersShared(tx, workspaceId)
    const wanted = [...new Set(ids.map((id) => id.toLowerCase()).filter(isUuid))].sort()
    // In id order: two batches sharing conversations lock them in the same order.
    const rows =
      wanted.length === 0
        ? []
        : await tx<LockedConversation[]>`
            SELECT ${tx.unsafe(LOCK_COLUMNS)} FROM conversations
            WHERE id = ANY(${wanted}::uuid[]) AND ${conversationVisibleTo(tx, ctx.caller)}
            ORDER BY id FOR UPDATE`
    const rollups: RolledEvent[] = []
    deferRollups(tx, rollups)
    // After the commit, the members' rooms of each team are read once for all its conversations.
    const teamRooms = new Map<string, Promise<string[]>>()
    const membersRooms: MembersRooms = (c) => {
      const key = `${c.workspaceId}:${c.teamId ?? ''}`
      if (!teamRooms.has(key)) teamRooms.set(key, conversationRooms(ctx.sql, c, true))
      return teamRooms.get(key)!
    }
    const batch: ConversationBatch = { tx, workspaceId, locked: new Map(rows.map((r) => [r.id, r])), sla: [], pending: [], counters: new Map(), after, membersRooms }
    result = await run({ ...ctx, batch })
    await flushPending(batch)
    // Rollups, then counters: the order of a single change (recorded inside it, counters after).
    await flushRollups(tx, rollups)
    await applyCountersDelta(tx, workspaceId, batch.counters)
  })
  for (const work of after) {
    try {
      await work()
    } catch (err) {
      ctx.log.error({ err }, 'after-commit work of a batched conversation change failed')
    }
  }
  return result!
}

/**
 * After commit: conversation:updated to who may see it, queue positions, routing signals.
 * `membersRooms` reads who may see it (a batch's reads it once per team: src/conversations/batch.ts).
 */
async function afterChange<T>(ctx: Ctx, out: Changed<T>, membersRooms: MembersRooms = (c) => conversationRooms(ctx.sql, c, true)): Promise<void> {
  const { row, m } = out
  await publishBreaches(ctx, out.breaches, membersRooms)
  const changed = m.after !== undefined
  if (m.publishUpdate ?? changed) {
    const outside = out.conversation && conversationFor(out.conversation, 'outside')
    if (out.conversation && outside) {
      // Members who may see it (a private team's: its members, owners and admins) and the
      // visitor, each as they may see it (conversationFor); one publish when the views are the same.
      const members = await membersRooms({ ...row, teamId: out.conversation.teamId })
      if (outside.labels.length !== out.conversation.labels.length || outside.priority !== out.conversation.priority || out.conversation.sla !== null) {
        ctx.events.publish(members, 'conversation:updated', { conversation: out.conversation })
        ctx.events.publish([rooms.guest(row.guestId)], 'conversation:updated', { conversation: outside })
      } else {
        ctx.events.publish([...members, rooms.guest(row.guestId)], 'conversation:updated', { conversation: out.conversation })
      }
    } else {
      const to = [...(await membersRooms(row)), rooms.guest(row.guestId)]
      ctx.events.publish(to, 'conversation:updated', { conversation: { id: row.id, deleted: true } })
    }
  }
  // A conversation that left a queue by hand (assigned, closed, moved, deleted): the visitors
  // behind it moved up.
  if (changed && row.queuedAt && row.teamId && (!out.conversation?.queuedAt || out.conversation.teamId !== row.teamId)) {
    ctx.routing.positions(row.teamId)
  }
  if (m.route) {
    ctx.routing.teams(m.route.teams ?? [])
    for (const u of m.route.members ?? []) if (u) ctx.routing.member(row.workspaceId, u)
  }
}

/** Columns an UPDATE returns for the counter state of the updated row. */
export const COUNTER_RETURNING = `status, deleted_at IS NOT NULL AS deleted, assigned_agent_id AS "assignedAgentId",
  channel_id AS "channelId", unread_count AS "unreadCount", team_id AS "teamId"`

/** `set` is a tagged fragment (sql`pinned = ${pinned}`): values stay parameters. */
export async function updateRow(sql: Sql, id: string, set: Fragment): Promise<CounterState> {
  const [after] = await sql<CounterState[]>`
    UPDATE conversations SET ${set}, updated_at = clock_timestamp() WHERE id = ${id}
    RETURNING ${sql.unsafe(COUNTER_RETURNING)}`
  return after
}

/** POST /conversations (visitor): a new OPEN conversation for the session's guest. */
export async function createConversation(ctx: Ctx, body: { channelId: string; guestId: string }): Promise<ConversationView> {
  const v = visitorOf(ctx)
  if (body.channelId.toLowerCase() !== v.channelId.toLowerCase() || body.guestId.toLowerCase() !== v.guestId.toLowerCase()) {
    throw forbidden('channelId and guestId must be those of the visitor session')
  }
  const id = uuidv7()
  const conversation = await ctx.sql.begin(async (sql) => {
    await insertConversation(sql, v, id, ctx.config.VISITOR_OPEN_CONVERSATIONS_MAX)
    return viewAfterChange(sql, id)
  })
  // Routing first: the reads below wait for the pool behind other requests (docs/routing.md, "Latency").
  ctx.routing.teams([conversation.teamId])
  // The creator's answer and the event carry the visitor's place in its team's queue.
  const withQueue = { ...conversation, queue: await queueOf(ctx.sql, conversation) }
  // Members see its service level (section 18), the visitor does not (conversationFor).
  const outside = conversationFor(withQueue, 'outside')
  if (withQueue.sla === null) {
    ctx.events.publish(await conversationRooms(ctx.sql, conversation), 'conversation:updated', { conversation: withQueue })
  } else {
    ctx.events.publish(await conversationRooms(ctx.sql, conversation, true), 'conversation:updated', { conversation: withQueue })
    ctx.events.publish([rooms.guest(conversation.guestId)], 'conversation:updated', { conversation: outside })
  }
  return outside
}

/**
 * Inserts a new OPEN conversation `id` for the visitor's guest inside the caller's transaction
 * (POST /conversations, an offline message, an inbound mail with its subject and ref); 404 when the guest or its active channel is gone,
 * 409 TOO_MANY_OPEN_CONVERSATIONS at the guest's cap of `maxOpen`.
 */
export async function insertConversation(
  sql: Sql,
  v: { workspaceId: string; channelId: string; guestId: string },
  id: string,
  maxOpen: number,
  email?: { subject: string | null; ref: string },
): Promise<{ createdAt: string; teamId: string | null }> {
  // The guest row is locked so that concurrent creates of one guest count one after another:
  // the cap of open conversations is a count about data, exact under concurrency.
  const [guest] = await sql<{ id: string }[]>`
    SELECT g.id FROM guests g JOIN channels ch ON ch.id = g.channel_id
    WHERE g.id = ${v.guestId} AND g.workspace_id = ${v.workspaceId} AND g.channel_id = ${v.channelId} AND ch.active
    FOR UPDATE OF g`
  if (!guest) throw guestNotFound('Guest or channel not found')
  // conv_guest_open_idx; LIMIT keeps the count bounded whatever the guest's history.
  const [open] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM (
      SELECT 1 FROM conversations WHERE guest_id = ${v.guestId} AND deleted_at IS NULL AND status = 'OPEN' LIMIT ${maxOpen}
    ) o`
  if (open.n >= maxOpen) throw tooManyOpenConversations(maxOpen)
  // The channel's default team (API.md section 16); an auto-assigning team queues it at once.
  const [{ createdAt, teamId }] = await sql<{ createdAt: string; teamId: string | null }[]>`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, last_message_at, created_at, updated_at, team_id, queued_at, subject, email_ref)
    SELECT ${id}, ${v.workspaceId}, ${v.channelId}, ${v.guestId}, clock_timestamp(), clock_timestamp(), clock_timestamp(),
           t.id, CASE WHEN t.assignment <> 'manual' THEN clock_timestamp() END, ${email?.subject ?? null}, ${email?.ref ?? null}
    FROM channels ch LEFT JOIN teams t ON t.id = ch.default_team_id
    WHERE ch.id = ${v.channelId}
    RETURNING created_at AS "createdAt", team_id AS "teamId"`
  await recordCreated(sql, { id, workspaceId: v.workspaceId, channelId: v.channelId }, createdAt)
  await slaOnCreate(sql, { id, workspaceId: v.workspaceId, channelId: v.channelId, guestId: v.guestId, teamId, assignedAgentId: null })
  // A new conversation has no unread messages: the delta is empty, but it goes through the
  // same function as every other change.
  const after = { status: 'OPEN', deleted: false, assignedAgentId: null, channelId: v.channelId, unreadCount: 0, teamId } as const
  await applyCountersDelta(sql, v.workspaceId, countersDelta(null, after))
  return { createdAt, teamId }
}

/** DELETE /conversations/:id: soft delete; leaves every list and count (its mentions' too). */
export async function deleteConversation(ctx: Ctx, id: string): Promise<void> {
  await mutateConversation(ctx, id, async (sql) => {
    const after = await updateRow(sql, id, sql`deleted_at = clock_timestamp()`)
    await removeConversationMentions(sql, id)
    // Its files are 404 at once (media checks deleted_at); the cleanup job removes their bytes.
    await sql`UPDATE attachments SET purge_at = clock_timestamp() WHERE conversation_id = ${id} AND purge_at IS NULL`
    await forgetConversation(sql, id)
    return { after }
  })
}

/** PATCH /:id/assign-agent: race-safe (row lock), idempotent for the current agent. */
export async function assignAgent(ctx: Ctx, id: string, agentId: string) {
  const member = memberOf(ctx)
  return mutateConversation(ctx, id, async (sql, row) => {
    // Judged under the conversation lock, after the conversation itself (a foreign or malformed
    // conversation id is a 404 whatever the agent).
    const [agent] = await sql<{ userId: string }[]>`
      SELECT user_id AS "userId" FROM members
      WHERE workspace_id = ${row.workspaceId} AND user_id = ${agentId} AND status = 'active'`
    if (!agent) throw invalidAgent()
    if (row.assignedAgentId === agentId) return {}
    // A manual assignment takes it out of its team's queue (and may exceed capacity).
    const after = await updateRow(sql, id, sql`assigned_agent_id = ${agentId}, queued_at = NULL`)
    await recordAssignedFromQueue(sql, row)
    await addHistory(sql, row, 'ASSIGNED', agentId, member.userId, 'MANUAL')
    return { after, route: { members: [row.assignedAgentId] } }
  })
}

/** PATCH /:id/unassign-agent: already unassigned changes nothing. */
export async function unassignAgent(ctx: Ctx, id: string) {
  const member = memberOf(ctx)
  return mutateConversation(ctx, id, async (sql, row) => {
    if (row.assignedAgentId === null) return {}
    const queue = await afterUnassign(sql, row)
    const after = await updateRow(sql, id, sql`assigned_agent_id = NULL, queued_at = CASE WHEN ${queue} THEN clock_timestamp() END`)
    await addHistory(sql, row, 'UNASSIGNED', null, member.userId, 'MANUAL')
    return { after, route: { teams: [row.teamId], members: [row.assignedAgentId] } }
  })
}

/** GET /:id/assignment-history, newest first. */
export async function assignmentHistory(ctx: Ctx, id: string): Promise<HistoryEntryView[]> {
  // Visibility only: the primary-key lookup, not the joined view.
  await findConversationForCaller(ctx, id)
  const rows = await ctx.sql<HistoryEntryView[]>`
    SELECT action, agent_id AS "agentId", previous_agent_id AS "previousAgentId", by_user_id AS "byUserId", reason, created_at AS at
    FROM assignment_history WHERE conversation_id = ${id}
    ORDER BY created_at DESC, id DESC`
  return rows.map((r) => ({ ...r, at: iso(r.at) }))
}

/**
 * PATCH /:id/mark-seen. A member clears the agents' unread state: the seen mark moves to at least
 * the newest message's time, so the recount (guest messages after the mark) is 0. A visitor moves
 * its own mark (widget side), which is not part of the conversation object: no event.
 */
export async function markSeen(ctx: Ctx, id: string) {
  if (ctx.caller.kind === 'visitor') {
    return mutateConversation(ctx, id, async (sql) => {
      await sql`
        UPDATE conversations SET visitor_last_seen_at = GREATEST(clock_timestamp(), last_message_at) WHERE id = ${id}`
      return {}
    })
  }
  return mutateConversation(ctx, id, async (sql, row) => {
    if (row.unreadCount === 0) return {}
    const after = await updateRow(sql, id, sql`unread_count = 0, agent_last_seen_at = GREATEST(clock_timestamp(), last_message_at)`)
    return { after }
  })
}

/** RESOLVED or legacy CLOSED. */
export const isClosedStatus = (status: string) => status === 'RESOLVED' || status === 'CLOSED'

/**
 * PATCH /:id/close: RESOLVED with closedAt, from OPEN, PENDING or SNOOZED (a snooze ends with it);
 * a resolved (or legacy CLOSED) one stays as it is.
 */
export async function closeConversation(ctx: Ctx, id: string) {
  return mutateConversation(ctx, id, async (sql, row) => {
    if (isClosedStatus(row.status)) return {}
    // A closed conversation waits for no one: it leaves the queue; its assignee has a slot free.
    const [after] = await sql<(CounterState & { closedAt: string })[]>`
      UPDATE conversations SET status = 'RESOLVED', closed_at = clock_timestamp(), snoozed_until = NULL, updated_at = clock_timestamp(), queued_at = NULL WHERE id = ${id}
      RETURNING ${sql.unsafe(COUNTER_RETURNING)}, closed_at AS "closedAt"`
    await recordResolved(sql, row, after.closedAt)
    return { after, route: { members: [row.assignedAgentId] } }
  })
}

/**
 * PATCH /:id/reopen: OPEN, closedAt null, from RESOLVED, CLOSED, PENDING or SNOOZED; an open one
 * stays as it is. Only a resolved one's reopen is an analytics reopen (a new open period): a
 * PENDING or SNOOZED conversation never left its period.
 */
export async function reopenConversation(ctx: Ctx, id: string) {
  return mutateConversation(ctx, id, async (sql, row) => {
    if (row.status === 'OPEN') return {}
    const [after] = await sql<(CounterState & { at: string })[]>`
      UPDATE conversations SET status = 'OPEN', closed_at = NULL, snoozed_until = NULL, updated_at = clock_timestamp() WHERE id = ${id}
      RETURNING ${sql.unsafe(COUNTER_RETURNING)}, updated_at AS at`
    if (isClosedStatus(row.status)) await recordReopened(sql, row, after.at)
    const requeued = await queueOnReopen(sql, row)
    return { after: requeued ?? after, route: { teams: [row.teamId] } }
  })
}

/** PATCH /:id/pin and /unpin. */
export async function setPinned(ctx: Ctx, id: string, pinned: boolean) {
  return mutateConversation(ctx, id, async (sql, row) => {
    if (row.pinned === pinned) return {}
    return { after: await updateRow(sql, id, sql`pinned = ${pinned}`) }
  })
}

/**
 * PATCH /:id/team (API.md section 16): moves it to `teamId` (a team of the workspace, or null;
 * else 400 INVALID_TEAM). The assignee stays only if they belong to the new team; an unassigned
 * conversation of an auto-assigning team is queued.
 */
export async function setConversationTeam(ctx: Ctx, id: string, teamId: string | null) {
  const member = memberOf(ctx)
  return mutateConversation(ctx, id, async (sql, row) => {
    const team = teamId === null ? null : await teamOfWorkspace(sql, row.workspaceId, teamId)
    if (row.teamId === team) return {}
    const after = await queueOnTeamChange(sql, row, team, member.userId)
    return { after, route: { teams: [team], members: [row.assignedAgentId] } }
  })
}
