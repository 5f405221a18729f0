import type { AttachmentView } from '../../schemas/attachments.js'
import type { ConversationSlaView, ConversationView, MessageView } from '../../schemas/conversations.js'
import type { Sql } from '../db/client.js'
import type { conversations, messages, SlaTarget } from '../db/schema.js'
import { iso } from '../time.js'

/**
 * The columns every conversation read selects, aliased to camelCase, with the guest and the
 * assigned agent joined. `labels`: one look-up per id the row holds (label_ids is distinct, its
 * writers see to it), LIMIT 1 keeping each a probe by id (the primary key, or a scan of a table of
 * a few pages that stops at the id) instead of testing every label of every workspace against the
 * array: 16 -> 6 us per labelled row at 120 labels (docs/lists.md, "Labels of a row"). Use as:
 *   sql`SELECT ${sql.unsafe(CONVERSATION_SELECT)} FROM ${sql.unsafe(CONVERSATION_FROM)} WHERE ...`
 * Timestamps stay Postgres text (for cursors); toConversationView formats them.
 */
export const CONVERSATION_SELECT = `
  c.id, c.workspace_id AS "workspaceId", c.channel_id AS "channelId", c.guest_id AS "guestId",
  c.status, c.pinned, c.assigned_agent_id AS "assignedAgentId", c.unread_count AS "unreadCount",
  c.last_message_at AS "lastMessageAt", c.last_message_preview AS "lastMessagePreview",
  c.created_at AS "createdAt", c.updated_at AS "updatedAt", c.closed_at AS "closedAt",
  c.deleted_at AS "deletedAt", c.priority, c.snoozed_until AS "snoozedUntil",
  CASE WHEN cardinality(c.label_ids) = 0 THEN '[]'::json ELSE (
    SELECT json_agg(json_build_object('id', l.id, 'name', l.name, 'color', l.color) ORDER BY lower(l.name), l.id)
    FROM unnest(c.label_ids) AS x(id)
    CROSS JOIN LATERAL (SELECT l.id, l.name, l.color FROM labels l WHERE l.id = x.id LIMIT 1) l) END AS labels,
  c.team_id AS "teamId", c.queued_at AS "queuedAt", c.subject,
  g.name AS "guestName", g.email AS "guestEmail", m.name AS "agentName", tt.name AS "teamName",
  c.sla_policy_id AS "slaPolicyId", sp.name AS "slaPolicyName",
  CASE WHEN c.sla_policy_id IS NOT NULL THEN (
    SELECT json_agg(json_build_object('target', st.target, 'dueAt', st.due_at)) FROM sla_targets st WHERE st.conversation_id = c.id) END AS "slaTargets",
  CASE WHEN c.sla_policy_id IS NOT NULL THEN (
    SELECT array_agg(DISTINCT sb.target) FROM sla_breaches sb WHERE sb.conversation_id = c.id AND sb.policy_id = c.sla_policy_id) END AS "slaBreaches"`

export const CONVERSATION_FROM = `
  conversations c
  JOIN guests g ON g.id = c.guest_id
  LEFT JOIN members m ON m.workspace_id = c.workspace_id AND m.user_id = c.assigned_agent_id
  LEFT JOIN teams tt ON tt.id = c.team_id
  LEFT JOIN sla_policies sp ON sp.id = c.sla_policy_id`

/** A row of CONVERSATION_SELECT: the conversation's columns plus the joined names. */
export type ConversationRecord = Pick<
  typeof conversations.$inferSelect,
  | 'id'
  | 'workspaceId'
  | 'channelId'
  | 'guestId'
  | 'status'
  | 'pinned'
  | 'assignedAgentId'
  | 'unreadCount'
  | 'lastMessageAt'
  | 'lastMessagePreview'
  | 'createdAt'
  | 'updatedAt'
  | 'closedAt'
  | 'deletedAt'
  | 'priority'
  | 'snoozedUntil'
  | 'teamId'
  | 'queuedAt'
  | 'slaPolicyId'
  | 'subject'
> & {
  /** The labels it holds, by name (null only if every one was deleted between the read's steps). */
  labels: { id: string; name: string; color: string }[] | null
  guestName: string
  /** Null until the guest gives an address. */
  guestEmail: string | null
  /** Null when unassigned, or when the assigned member was removed since. */
  agentName: string | null
  teamName: string | null
  slaPolicyName: string | null
  /** Its open SLA targets (running or paused: dueAt null), null without a policy or targets. */
  slaTargets: { target: SlaTarget; dueAt: string | null }[] | null
  /** The targets breached under its policy, null when none. */
  slaBreaches: SlaTarget[] | null
}

const BREACH_ORDER: Record<SlaTarget, number> = { FIRST_RESPONSE: 0, NEXT_RESPONSE: 1, RESOLUTION: 2 }

/**
 * The `sla` object (API.md section 18): each *DueAt while its target is open and running (overdue
 * too; null while the clocks stop), the targets ever breached under this policy, and the status
 * those give: BREACHED with a breach, else ON_TRACK while a target is open, else MET.
 */
function slaView(r: ConversationRecord): ConversationSlaView {
  if (!r.slaPolicyId) return null
  const open = r.slaTargets ?? []
  const due = (t: SlaTarget) => {
    const d = open.find((o) => o.target === t)?.dueAt
    // json_agg writes timestamptz as "2026-11-25T10:00:00.123456+00:00": iso() formats it like any other.
    return d ? iso(d) : null
  }
  const breaches = [...(r.slaBreaches ?? [])].sort((a, b) => BREACH_ORDER[a] - BREACH_ORDER[b])
  return {
    policyId: r.slaPolicyId,
    policyName: r.slaPolicyName ?? '',
    firstResponseDueAt: due('FIRST_RESPONSE'),
    nextResponseDueAt: due('NEXT_RESPONSE'),
    resolutionDueAt: due('RESOLUTION'),
    status: breaches.length > 0 ? 'BREACHED' : open.length > 0 ? 'ON_TRACK' : 'MET',
    breaches,
  }
}

/**
 * One conversation as the API shows it, by id alone (check the caller's visibility first), inside
 * or outside a transaction; null when it is missing or deleted.
 */
export async function findConversationView(sql: Sql, id: string): Promise<ConversationView | null> {
  const [row] = await sql<ConversationRecord[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)} FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.id = ${id} AND c.deleted_at IS NULL`
  return row ? toConversationView(row) : null
}

export function toConversationView(r: ConversationRecord): ConversationView {
  return {
    id: r.id,
    workspaceId: r.workspaceId,
    channelId: r.channelId,
    guestId: r.guestId,
    guest: { id: r.guestId, name: r.guestName, email: r.guestEmail },
    status: r.status,
    pinned: r.pinned,
    assignedAgentId: r.assignedAgentId,
    assignedAgent: r.assignedAgentId ? { userId: r.assignedAgentId, name: r.agentName ?? r.assignedAgentId } : null,
    seen: r.unreadCount === 0,
    unreadCount: r.unreadCount,
    lastMessageAt: iso(r.lastMessageAt),
    lastMessagePreview: r.lastMessagePreview,
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
    closedAt: iso(r.closedAt),
    labels: r.labels ?? [],
    priority: r.priority,
    snoozedUntil: iso(r.snoozedUntil),
    teamId: r.teamId,
    team: r.teamId ? { id: r.teamId, name: r.teamName ?? '' } : null,
    queuedAt: iso(r.queuedAt),
    sla: slaView(r),
    subject: r.subject,
  }
}

/** The columns every message read selects (lists, transcripts), aliased to camelCase. */
export const MESSAGE_COLUMNS = `
  id, conversation_id AS "conversationId", sender_type AS "senderType", sender_id AS "senderId",
  sender_name AS "senderName", body, private, created_at AS "createdAt",
  delivery_status AS "deliveryStatus", delivery_error AS "deliveryError", delivery_at AS "deliveryAt"`

export type MessageRecord = Pick<
  typeof messages.$inferSelect,
  'id' | 'conversationId' | 'senderType' | 'senderId' | 'senderName' | 'body' | 'private' | 'createdAt' | 'deliveryStatus' | 'deliveryError' | 'deliveryAt'
>

/** A message as the API shows it, with its files (section 10; empty when it has none). */
export function toMessageView(m: MessageRecord, attachments: AttachmentView[] = []): MessageView {
  const { deliveryStatus, deliveryError, deliveryAt, ...rest } = m
  return {
    ...rest,
    attachments,
    createdAt: iso(m.createdAt),
    // An e-mail reply's delivery (API.md section 19); null on web chat.
    delivery: deliveryStatus ? { status: deliveryStatus, error: deliveryError, at: iso(deliveryAt ?? m.createdAt) } : null,
  }
}
