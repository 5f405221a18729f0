/**
 * Parley's database schema (drizzle). Every tenant-owned table carries workspace_id, and every
 * query a member makes filters on it. The "serves" comment on each index names the query it is
 * for; docs/DATA.md has the same map. Timestamps are timestamptz with microseconds: cursors
 * compare them as text, never through a JS Date (which keeps only milliseconds).
 */
import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  check,
  customType,
  doublePrecision,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'

import {
  memberRoles,
  memberStatuses,
  conversationStatus,
  senderTypes,
  conversationPriorities,
  viewScopes,
  thumbRefusals,
  assignmentActions,
  assignmentReasons,
  teamAssignments,
  billingProviders,
  subscriptionStatuses,
  paymentKinds,
  cannedScopes,
  metricKinds,
  metricGrains,
  slaTargets,
  channelKinds,
  emailStates,
  emailDirections,
  deliveryStatuses,
} from './vocabulary.js'

// The stored vocabularies (src/db/vocabulary.ts): the columns below use them; re-exported for
// type imports (a value import from here would load drizzle-orm into the API: import those from
// vocabulary.ts).
export * from './vocabulary.js'

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 6, mode: 'string' })
const createdAt = () => ts('created_at').notNull().defaultNow()

export const workspaces = pgTable('workspaces', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: createdAt(),
})

export const members = pgTable(
  'members',
  {
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    /** The identity provider's `sub`. */
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    email: text('email').notNull().default(''),
    role: text('role', { enum: memberRoles }).notNull(),
    status: text('status', { enum: memberStatuses }).notNull().default('active'),
    avatarUrl: text('avatar_url'),
    joinedAt: ts('joined_at').notNull().defaultNow(),
  },
  (t) => [
    // serves: membership check on every member request, GET /auth/members (ordered by joined_at, user_id)
    primaryKey({ columns: [t.workspaceId, t.userId] }),
    // serves: GET /workspaces (the caller's memberships)
    index('members_user_idx').on(t.userId),
  ],
)

export const channels = pgTable(
  'channels',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    kind: text('kind', { enum: channelKinds }).notNull().default('web'),
    active: boolean('active').notNull().default(true),
    allowedOrigins: text('allowed_origins').array().notNull().default(sql`'{}'::text[]`),
    requireChannelToken: boolean('require_channel_token').notNull().default(false),
    channelToken: text('channel_token').notNull(),
    identitySecret: text('identity_secret').notNull(),
    /** Bumped when the channel is deactivated: visitor sessions signed under an older epoch are revoked for good. */
    sessionEpoch: integer('session_epoch').notNull().default(0),
    /** The widget settings a PATCH named (API.md section 14); src/support/widget-settings.ts fills in the defaults on read. */
    widget: jsonb('widget').notNull().default(sql`'{}'::jsonb`),
    /** The team a conversation created on this channel belongs to (API.md section 16). */
    defaultTeamId: uuid('default_team_id').references(() => teams.id, { onDelete: 'set null' }),
    /**
     * An e-mail channel's settings without the passwords (kind 'email'; null on web):
     * `{ address, fromName, imap: { host, port, secure, username, mailbox }, smtp: { host, port,
     * secure, username } }` (src/email/settings.ts EmailSettings). Passwords are the two columns below.
     */
    email: jsonb('email'),
    /** The IMAP password, AES-256-GCM under CHANNEL_SECRET_KEY (src/email/secrets.ts); never plaintext. */
    emailImapPassword: text('email_imap_password'),
    /** The SMTP password, encrypted the same way. */
    emailSmtpPassword: text('email_smtp_password'),
    /** `email.status.state`: 'ok' until a check, sync or send fails (null on web). */
    emailState: text('email_state', { enum: emailStates }),
    /** The last failure's message (null while ok). */
    emailError: text('email_error'),
    /** The mailbox reader's last successful sync (null until the first). */
    emailLastSyncAt: ts('email_last_sync_at'),
    createdAt: createdAt(),
  },
  (t) => [
    // serves: GET /channels
    index('channels_workspace_idx').on(t.workspaceId, t.createdAt),
    uniqueIndex('channels_token_uq').on(t.channelToken),
  ],
)

export const guests = pgTable(
  'guests',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    channelId: uuid('channel_id').notNull().references(() => channels.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Null until the visitor gives one (POST /auth, an offline message, a member's PATCH /visitors/:guestId). */
    email: text('email'),
    /** Set when the guest was created or resumed through a valid identityHash. */
    verified: boolean('verified').notNull().default(false),
    /** A flat object of at most 50 keys (src/visitors/attributes.ts checks the stored result). */
    attributes: jsonb('attributes').notNull().default(sql`'{}'::jsonb`),
    /** The last bootstrap, guest message or gateway connection. */
    lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // serves: GET /visitors (most recent lastSeenAt first, keyset)
    index('guests_workspace_seen_idx').on(t.workspaceId, t.lastSeenAt, t.id),
    // serves: GET /visitors?channelId=
    index('guests_channel_seen_idx').on(t.channelId, t.lastSeenAt, t.id),
    // serves: POST /auth with identityHash (only verified guests are ever matched by e-mail)
    uniqueIndex('guests_verified_email_uq').on(t.channelId, sql`lower(${t.email})`).where(sql`${t.verified}`),
    // serves: search over guest name / e-mail (substrings of 3+ chars)
    index('guests_name_trgm_idx').using('gin', sql`${t.name} gin_trgm_ops`),
    index('guests_email_trgm_idx').using('gin', sql`${t.email} gin_trgm_ops`),
  ],
)

export const conversations = pgTable(
  'conversations',
  {
    /** UUIDv7, made by the application. */
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    channelId: uuid('channel_id').notNull().references(() => channels.id),
    guestId: uuid('guest_id').notNull().references(() => guests.id),
    status: text('status', { enum: conversationStatus }).notNull().default('OPEN'),
    pinned: boolean('pinned').notNull().default(false),
    assignedAgentId: text('assigned_agent_id'),
    /** Guest messages the agents have not marked seen. */
    unreadCount: integer('unread_count').notNull().default(0),
    agentLastSeenAt: ts('agent_last_seen_at'),
    /** When the visitor last marked the agents' messages seen (widget side). */
    visitorLastSeenAt: ts('visitor_last_seen_at'),
    /** Creation time until the first message: never null, so it sorts without COALESCE. */
    lastMessageAt: ts('last_message_at').notNull().defaultNow(),
    lastMessagePreview: text('last_message_preview'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    closedAt: ts('closed_at'),
    deletedAt: ts('deleted_at'),
    // Analytics state (src/analytics/record.ts), changed under the row lock with the events.
    /** Reopens so far: the current open period's number (0 from creation). */
    cycle: integer('cycle').notNull().default(0),
    /** When the current period began: creation or the last reopen (null: created_at). */
    cycleStartedAt: ts('cycle_started_at'),
    /** No public agent reply since the conversation was opened or reopened. */
    awaitingReply: boolean('awaiting_reply').notNull().default(true),
    /** 'GUEST' | 'AGENT' of the last public message; null before the first. */
    lastPublicSender: text('last_public_sender', { enum: senderTypes }),
    /** Public messages (notes and system messages never): also the sequence of message events. */
    publicMessages: integer('public_messages').notNull().default(0),
    /** Its team (API.md section 16); null: none. */
    teamId: uuid('team_id').references(() => teams.id, { onDelete: 'set null' }),
    /** When it started waiting in its team's queue; null when not waiting (docs/routing.md). */
    queuedAt: ts('queued_at'),
    // Triage (API.md section 17, src/triage/).
    /** The workspace labels it holds (at most 20); a deleted label is removed from every row. */
    labelIds: uuid('label_ids').array().notNull().default(sql`'{}'::uuid[]`),
    priority: text('priority', { enum: conversationPriorities }),
    /** 4 urgent .. 1 low, 0 none: the sortBy=priority key (descending), kept by PostgreSQL. */
    priorityRank: smallint('priority_rank')
      .notNull()
      .generatedAlwaysAs(sql`CASE priority WHEN 'urgent' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END`),
    /** Set only while SNOOZED until a time: the wake-up sweep's due time (src/triage/wake.ts). */
    snoozedUntil: ts('snoozed_until'),
    // Service levels (API.md section 18, src/sla/).
    /** Its SLA policy; null: none. Deleting a policy removes it from its conversations (src/sla/policies.ts). */
    slaPolicyId: uuid('sla_policy_id').references(() => slaPolicies.id, { onDelete: 'set null' }),
    /** The policy was chosen by hand (PATCH /:id/sla): matching leaves it alone. */
    slaManual: boolean('sla_manual').notNull().default(false),
    /** The nearest due time of its running targets (sla_targets), null when none runs: sortBy=slaDueAt. */
    slaDueAt: ts('sla_due_at'),
    /** An e-mail conversation's subject (the first mail's); null on web chat. */
    subject: text('subject'),
    /**
     * An e-mail conversation's reference token, `[#<ref>]` in every outgoing subject: 10
     * characters of lower-case Crockford base32 (50 random bits, src/email/ref.ts), unique per
     * channel; null on web chat.
     */
    emailRef: text('email_ref'),
  },
  (t) => {
    const live = sql`${t.deletedAt} IS NULL`
    const open = sql`${t.deletedAt} IS NULL AND ${t.status} = 'OPEN'`
    const active = sql`${t.deletedAt} IS NULL AND ${t.status} IN ('OPEN', 'PENDING', 'SNOOZED')`
    const closed = sql`${t.deletedAt} IS NULL AND ${t.status} IN ('RESOLVED', 'CLOSED')`
    // Each list index leads with (workspace_id, pinned) so that one B-tree serves both sort
    // directions: a pinned-first page reads the pinned range, then the unpinned range, each an
    // index range scan in either direction.
    return [
      // serves: GET /conversations sorted by lastMessageAt / createdAt / updatedAt. Migration 0024
      // adds INCLUDE (label_ids, team_id, priority_rank) to the first: `?labelIds=` reads its keys
      // from the index alone (docs/lists.md, "Labels from the index"); drizzle cannot say INCLUDE.
      index('conv_open_last_msg_idx').on(t.workspaceId, t.pinned, t.lastMessageAt, t.id).where(open),
      index('conv_open_created_idx').on(t.workspaceId, t.pinned, t.createdAt, t.id).where(open),
      index('conv_open_updated_idx').on(t.workspaceId, t.pinned, t.updatedAt, t.id).where(open),
      // serves: GET /conversations/Myconversation (any status)
      index('conv_mine_last_msg_idx').on(t.workspaceId, t.assignedAgentId, t.pinned, t.lastMessageAt, t.id).where(live),
      index('conv_mine_created_idx').on(t.workspaceId, t.assignedAgentId, t.pinned, t.createdAt, t.id).where(live),
      index('conv_mine_updated_idx').on(t.workspaceId, t.assignedAgentId, t.pinned, t.updatedAt, t.id).where(live),
      // serves: GET /conversations/closed, one per sortBy. closed_at may be null on legacy CLOSED
      // imports: it sorts as -infinity (oldest), the same expression in the index and the query.
      index('conv_closed_closed_idx').on(t.workspaceId, sql`COALESCE(${t.closedAt}, '-infinity'::timestamptz)`, t.id).where(closed),
      index('conv_closed_last_msg_idx').on(t.workspaceId, t.lastMessageAt, t.id).where(closed),
      index('conv_closed_created_idx').on(t.workspaceId, t.createdAt, t.id).where(closed),
      index('conv_closed_updated_idx').on(t.workspaceId, t.updatedAt, t.id).where(closed),
      // serves: GET /conversations/guest/:guestId/history
      index('conv_guest_idx').on(t.guestId, t.createdAt, t.id).where(live),
      // serves: the open-conversation cap of POST /conversations (a guest's OPEN ones, counted)
      index('conv_guest_open_idx').on(t.guestId).where(open),
      // serves: counts/reconcile and available-agents' openAssigned
      index('conv_open_unread_idx').on(t.workspaceId, t.assignedAgentId).where(open),
      // serves: GET /analytics/live (index-only count of the open conversations)
      index('conv_open_live_idx')
        .on(t.workspaceId, t.channelId, t.assignedAgentId, t.awaitingReply, t.lastPublicSender)
        .where(open),
      // serves: GET /analytics/conversations.csv (created in the range, oldest first)
      index('conv_created_idx').on(t.workspaceId, t.createdAt, t.id).where(live),
      // serves: routing (a team's queue, oldest first), GET /teams/:id/queue, the visitor's position
      index('conv_team_queue_idx').on(t.teamId, t.queuedAt, t.id).where(sql`${t.deletedAt} IS NULL AND ${t.queuedAt} IS NOT NULL`),
      // serves: a team's deletion (its conversations leave it), closed lists by team
      index('conv_team_idx').on(t.teamId).where(sql`${t.teamId} IS NOT NULL`),
      // serves: GET /conversations?teamId= sorted by lastMessageAt (the default)
      index('conv_open_team_last_msg_idx').on(t.workspaceId, t.teamId, t.pinned, t.lastMessageAt, t.id).where(open),
      // serves: GET /conversations?status=pending|snoozed (one status, pinned first, by lastMessageAt)
      index('conv_status_last_msg_idx').on(t.workspaceId, t.status, t.pinned, t.lastMessageAt, t.id).where(live),
      // serves: GET /conversations?status=active (OPEN, PENDING and SNOOZED together)
      index('conv_active_last_msg_idx').on(t.workspaceId, t.pinned, t.lastMessageAt, t.id).where(active),
      // serves: GET /conversations?sortBy=priority (pinned first, urgent..none, newest message first)
      index('conv_open_priority_idx').on(t.workspaceId, t.pinned, t.priorityRank, t.lastMessageAt, t.id).where(open),
      // serves: GET /conversations?labelIds= (a rare label: its rows from the posting lists, then a
      // top-N sort; a common one walks the list index and filters) and a label's delete
      index('conv_labels_idx').using('gin', t.labelIds).where(live),
      // serves: the snooze wake-up sweep (due SNOOZED rows, oldest due first)
      // serves: GET /conversations?sortBy=slaDueAt (pinned first, nearest due first, none last)
      index('conv_open_sla_due_idx').on(t.workspaceId, t.pinned, sql`COALESCE(${t.slaDueAt}, 'infinity'::timestamptz)`, t.id).where(open),
      // serves: a deleted policy's conversations
      index('conv_sla_policy_idx').on(t.slaPolicyId).where(sql`${t.slaPolicyId} IS NOT NULL`),
      index('conv_snoozed_until_idx').on(t.snoozedUntil).where(sql`${t.deletedAt} IS NULL AND ${t.status} = 'SNOOZED' AND ${t.snoozedUntil} IS NOT NULL`),
      // serves: inbound threading by the subject's [#ref] (API.md section 19)
      uniqueIndex('conv_email_ref_uq').on(t.channelId, t.emailRef).where(sql`${t.emailRef} IS NOT NULL`),
    ]
  },
)

export const messages = pgTable(
  'messages',
  {
    /** UUIDv7, made by the application: time-ordered, so (created_at, id) pages stably. */
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull(),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    senderType: text('sender_type', { enum: senderTypes }).notNull(),
    senderId: text('sender_id'),
    senderName: text('sender_name').notNull(),
    body: text('body').notNull(),
    /** The client's idempotency key: a retried send returns the first message. */
    clientMessageId: text('client_message_id'),
    /** An agents' internal note: members only, never a visitor (src/conversations/visibility.ts). */
    private: boolean('private').notNull().default(false),
    /**
     * An e-mail reply's delivery (API.md section 19): null on web chat, on notes, and on what
     * was not sent by mail; 'queued' while the outbound job retries, then 'sent' or 'failed'.
     */
    deliveryStatus: text('delivery_status', { enum: deliveryStatuses }),
    /** The last attempt's error (kept on 'failed', and while 'queued' after a failed attempt). */
    deliveryError: text('delivery_error'),
    /** When delivery_status last changed. */
    deliveryAt: ts('delivery_at'),
    createdAt: createdAt(),
    search: tsvector('search').generatedAlwaysAs(sql`to_tsvector('simple', body)`),
  },
  (t) => [
    // serves: GET /conversations/:id/messages, transcripts, unread recount
    index('messages_conversation_idx').on(t.conversationId, t.createdAt, t.id),
    // serves: POST /conversations/:id/messages retries
    uniqueIndex('messages_client_id_uq')
      .on(t.conversationId, t.senderType, t.clientMessageId)
      .where(sql`${t.clientMessageId} IS NOT NULL`),
  ],
)

/**
 * The search index's documents: a conversation's messages in chunks of up to 32 (oldest first,
 * the newest chunk is the one that grows), kept by the statement-level trigger
 * `search_chunks_add` on messages (migrations, custom SQL). `doc` holds the chunk's distinct
 * lexemes without positions, each tagged with its workspace (`search_tag(workspace_id) || ':'
 * || lexeme`) plus the bare tag, so one plain GIN index answers "this word in this workspace"
 * from one posting list; and the same lexemes (and tag) tagged with the workspace and the 30-day
 * period of `last_message_at` (`c70ac61b/692:refund`), so it also answers "this word in this
 * workspace in this period". A chunk is a candidate only: messages.search decides the match, the
 * rank and the excerpt (docs/search.md).
 */
export const searchChunks = pgTable(
  'search_chunks',
  {
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    /** 0 for the conversation's first 32 messages, then 1, ... */
    seq: integer('seq').notNull(),
    workspaceId: uuid('workspace_id').notNull(),
    messages: integer('messages').notNull(),
    lastMessageAt: ts('last_message_at').notNull(),
    doc: tsvector('doc').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.seq] }),
    // serves: GET /conversations/search, candidates from a tagged posting list (a period's, or all of a word's)
    index('search_chunks_doc_idx').using('gin', t.doc),
    // serves: GET /conversations/search, newest-first walk for a common word (stops after a window)
    index('search_chunks_recent_idx').on(t.workspaceId, t.lastMessageAt, t.conversationId, t.seq),
  ],
)

export const assignmentHistory = pgTable(
  'assignment_history',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull(),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    action: text('action', { enum: assignmentActions }).notNull(),
    agentId: text('agent_id'),
    previousAgentId: text('previous_agent_id'),
    byUserId: text('by_user_id'),
    /** Why (API.md section 16); null on entries older than teams. */
    reason: text('reason', { enum: assignmentReasons }),
    at: createdAt(),
  },
  // serves: GET /conversations/:id/assignment-history (newest first)
  (t) => [index('assignment_history_conv_idx').on(t.conversationId, t.at, t.id)],
)

/**
 * Workspace unread counters. scope: 'all' | 'unassigned' | 'agent:<userId>' | 'channel:<id>'.
 * A scope is spread over a few slot rows so busy writers do not queue on one row; reads SUM them.
 */
export const unreadCounters = pgTable(
  'unread_counters',
  {
    workspaceId: uuid('workspace_id').notNull(),
    scope: text('scope').notNull(),
    slot: smallint('slot').notNull(),
    /** OPEN conversations with unread guest messages. */
    conversations: integer('conversations').notNull().default(0),
    /** Unread guest messages in them. */
    messages: integer('messages').notNull().default(0),
  },
  // serves: GET /conversations/unread-count (a handful of rows per workspace)
  (t) => [primaryKey({ columns: [t.workspaceId, t.scope, t.slot] })],
)

export const webhookEvents = pgTable(
  'webhook_events',
  {
    provider: text('provider', { enum: billingProviders }).notNull(),
    eventId: text('event_id').notNull(),
    type: text('type').notNull(),
    workspaceId: uuid('workspace_id'),
    /** 'processed' | 'ignored' (type not handled) | 'unknown_workspace' */
    outcome: text('outcome').notNull(),
    occurredAt: ts('occurred_at'),
    receivedAt: ts('received_at').notNull().defaultNow(),
    payload: jsonb('payload').notNull(),
  },
  // serves: exactly-once processing (INSERT ... ON CONFLICT DO NOTHING)
  (t) => [primaryKey({ columns: [t.provider, t.eventId] })],
)

export const subscriptions = pgTable('subscriptions', {
  workspaceId: uuid('workspace_id').primaryKey().references(() => workspaces.id, { onDelete: 'cascade' }),
  status: text('status', { enum: subscriptionStatuses }).notNull().default('none'),
  provider: text('provider'),
  plan: text('plan'),
  providerSubscriptionId: text('provider_subscription_id'),
  currentPeriodEnd: ts('current_period_end'),
  /** Time of the event that last set the status: an older event never overwrites it. */
  lastEventAt: ts('last_event_at'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
})

export const payments = pgTable(
  'payments',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    provider: text('provider', { enum: billingProviders }).notNull(),
    kind: text('kind', { enum: paymentKinds }).notNull(),
    /** Minor units of the currency. */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    providerObjectId: text('provider_object_id').notNull(),
    eventId: text('event_id').notNull(),
    occurredAt: ts('occurred_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    // serves: replays never double count (ON CONFLICT DO NOTHING)
    uniqueIndex('payments_object_uq').on(t.provider, t.kind, t.providerObjectId),
    // serves: GET /billing/payments (newest first, keyset)
    index('payments_workspace_idx').on(t.workspaceId, t.occurredAt, t.id),
  ],
)

/** One row per transcript e-mail request; the pg-boss job carries its id as singleton key. */
export const transcriptRequests = pgTable(
  'transcript_requests',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull(),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    requestedBy: text('requested_by').notNull(),
    status: text('status', { enum: ['queued', 'sent', 'failed'] }).notNull().default('queued'),
    createdAt: createdAt(),
    sentAt: ts('sent_at'),
  },
  (t) => [
    index('transcript_requests_conv_idx').on(t.conversationId, t.createdAt),
    // serves: the per-recipient quota of transcripts visitors ask for (any workspace, a rolling day)
    index('transcript_requests_visitor_recipient_idx')
      .on(sql`lower(${t.email})`, t.createdAt)
      .where(sql`${t.requestedBy} LIKE 'guest:%'`),
  ],
)

/**
 * Saved replies. `channel_ids` limits where the picker offers one (empty: every channel); channels
 * are never deleted, so the ids stay valid without a link table. The trigram indexes on shortcut
 * and on haystack serve the picker's rare substring matches (migration issue15_agent_tools_sql).
 */
export const cannedResponses = pgTable(
  'canned_responses',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    scope: text('scope', { enum: cannedScopes }).notNull(),
    /** The creator's userId (workspace ones too); a personal one is visible to this member only. */
    ownerId: text('owner_id').notNull(),
    shortcut: text('shortcut').notNull(),
    title: text('title').notNull().default(''),
    body: text('body').notNull(),
    channelIds: uuid('channel_ids').array().notNull().default(sql`'{}'::uuid[]`),
    usageCount: integer('usage_count').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    /**
     * Title and body lower-cased once at write: the picker matches it with LIKE on the lower-cased
     * query (a byte comparison), several times cheaper per row than ILIKE on the raw text.
     */
    haystack: text('haystack').generatedAlwaysAs(sql`lower(title || chr(10) || body)`),
  },
  (t) => [
    // serves: SHORTCUT_TAKEN among the workspace's responses, and the picker's shortcut prefix match
    uniqueIndex('canned_workspace_shortcut_uq').on(t.workspaceId, t.shortcut).where(sql`${t.scope} = 'workspace'`),
    // serves: SHORTCUT_TAKEN among one member's personal responses
    uniqueIndex('canned_personal_shortcut_uq').on(t.workspaceId, t.ownerId, t.shortcut).where(sql`${t.scope} = 'personal'`),
    // serves: GET /canned-responses without q (by shortcut, keyset) and the picker's prefix matches
    // (shortcut is COLLATE "C" in the custom migration: byte order, so a prefix is a range)
    index('canned_list_idx').on(t.workspaceId, t.shortcut, t.id),
    // serves: the picker's groups, each by usageCount then newest (walked in order, stops at the page)
    index('canned_usage_idx').on(t.workspaceId, t.usageCount.desc(), t.createdAt.desc(), t.id.desc()),
  ],
)

/** One row per mentioned member of a private note, written in the note's transaction. */
export const mentions = pgTable(
  'mentions',
  {
    /** UUIDv7: newest first is (created_at, id) descending. */
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    /** The mentioned member. */
    userId: text('user_id').notNull(),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    messageId: uuid('message_id').notNull().references(() => messages.id, { onDelete: 'cascade' }),
    byUserId: text('by_user_id').notNull(),
    byName: text('by_name').notNull(),
    excerpt: text('excerpt').notNull(),
    createdAt: createdAt(),
    readAt: ts('read_at'),
    /** Set once the mention e-mail (MENTION_EMAIL) went out: a redelivered job sends nothing. */
    mailedAt: ts('mailed_at'),
  },
  (t) => [
    // serves: GET /mentions (newest first, keyset), read-all
    index('mentions_member_idx').on(t.workspaceId, t.userId, t.createdAt, t.id),
    // serves: GET /mentions?unread=true, read-all
    index('mentions_member_unread_idx').on(t.workspaceId, t.userId, t.createdAt, t.id).where(sql`${t.readAt} IS NULL`),
    // serves: a conversation's delete removes its mentions; one mention per member and note
    uniqueIndex('mentions_message_user_uq').on(t.messageId, t.userId),
    index('mentions_conversation_idx').on(t.conversationId),
  ],
)

/** Unread mentions per member, kept in the same transaction as every change (GET /mentions/unread-count). */
export const mentionCounters = pgTable(
  'mention_counters',
  {
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    unread: integer('unread').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId] })],
)

/**
 * Uploaded files (docs/attachments.md). The bytes live in object storage under `storage_key`
 * (and `thumb_key` once a thumbnail was made); this row is their metadata. An upload is pending
 * until a message names it (`message_id`), then attached once and for good.
 */
export const attachments = pgTable(
  'attachments',
  {
    /** UUIDv7, made by the application. */
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull(),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    messageId: uuid('message_id').references(() => messages.id, { onDelete: 'cascade' }),
    /** Who uploaded it: 'GUEST' (its guest id) or 'AGENT' (the member's userId). */
    uploaderType: text('uploader_type', { enum: senderTypes }).notNull(),
    uploaderId: text('uploader_id').notNull(),
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    sha256: text('sha256').notNull(),
    width: integer('width'),
    height: integer('height'),
    storageKey: text('storage_key').notNull(),
    thumbKey: text('thumb_key'),
    /** Set when no thumbnail will ever be made (400 NO_THUMBNAIL without decoding again). */
    thumbRefusal: text('thumb_refusal', { enum: thumbRefusals }),
    /** Copied from the message that attached it: a private note's file is for members only. */
    private: boolean('private').notNull().default(false),
    createdAt: createdAt(),
    attachedAt: ts('attached_at'),
    /** Set when its conversation is deleted: the cleanup job removes the bytes and the row. */
    purgeAt: ts('purge_at'),
  },
  (t) => [
    // serves: GET /conversations/:id/attachments (newest attached first, keyset)
    index('attachments_files_idx').on(t.conversationId, t.attachedAt, t.id).where(sql`${t.messageId} IS NOT NULL`),
    // serves: the attachments of a page of messages (message lists, message:new, transcripts)
    index('attachments_message_idx').on(t.messageId).where(sql`${t.messageId} IS NOT NULL`),
    // serves: the cleanup job (pending uploads older than UPLOAD_PENDING_TTL_S)
    index('attachments_pending_idx').on(t.createdAt).where(sql`${t.messageId} IS NULL`),
    // serves: the cleanup job (files of deleted conversations)
    index('attachments_purge_idx').on(t.purgeAt).where(sql`${t.purgeAt} IS NOT NULL`),
  ],
)

/**
 * Analytics events, one per fact, written in the same transaction as the change that caused it
 * (src/analytics/record.ts). The key names the fact: (conversation, kind, seq) where seq is 0 for
 * the creation and the rating, the open period (cycle) for reopens, first responses and closes,
 * and the public message's ordinal for messages; a retry conflicts instead of counting twice.
 * A deleted conversation's events are removed (and subtracted from the rollups).
 */
export const metricEvents = pgTable(
  'metric_events',
  {
    workspaceId: uuid('workspace_id').notNull(),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: metricKinds }).notNull(),
    seq: integer('seq').notNull(),
    channelId: uuid('channel_id').notNull(),
    /** The member it is attributed to (sender, or the assignee at the time); null: nobody. */
    agentId: text('agent_id'),
    /**
     * The conversation's team at that moment (API.md section 16: `/analytics/*?teamId=`), read
     * from the locked row when the event is written; null: no team. Not a foreign key: a deleted
     * team's history keeps its id (its conversations leave the team, their past does not).
     */
    teamId: uuid('team_id'),
    /** Seconds (first response, resolution) or the rating (csat); null for counts. */
    value: doublePrecision('value'),
    occurredAt: ts('occurred_at').notNull(),
  },
  (t) => [
    // serves: idempotent recording (ON CONFLICT DO NOTHING), the CSV's first response / last close
    primaryKey({ columns: [t.conversationId, t.kind, t.seq] }),
    // serves: analytics edges (the part of a range inside a partial UTC hour) and exact percentiles
    // (the trailing columns make it an index-only scan)
    index('metric_events_ws_kind_time_idx').on(t.workspaceId, t.kind, t.occurredAt, t.channelId, t.agentId, t.value),
  ],
)

/**
 * Rollups of metric_events per UTC hour, day, third of a month and month (metric_period() in
 * migration issue16_analytics_sql), kept in the same transaction as the events (docs/analytics.md, "Rollups").
 * dim: 0 the workspace, 1 per channel, 2 per agent, 3 per agent and channel; plus 4 (the team
 * bit) for the same four per team (4 team, 5 team and channel, 6 team and agent, 7 all three),
 * written only for events of a conversation that had a team; the columns a dim does not split by
 * hold the zero uuid / ''. Hours exist for dims without the agent bit (0, 1, 4, 5) only (per
 * agent they would be about one row per event). Each fact is
 * added to one of a few slot rows chosen at random, so concurrent writers of one workspace do not
 * queue on a row; readers sum the slots. A duration kind counts its samples per
 * log-spaced bucket (src/analytics/histogram.ts), so percentiles of long ranges merge by adding:
 * one row per bucket in the dims without the agent bit, and in the dims with it (2, 3, 6, 7) one
 * row (bucket -1) whose `hist` holds the bucket counts, so a year of /analytics/agents reads a row
 * per agent, period and kind whatever the volume (docs/analytics.md, "Per-agent histograms").
 */
export const metricRollups = pgTable(
  'metric_rollups',
  {
    workspaceId: uuid('workspace_id').notNull(),
    dim: smallint('dim').notNull(),
    grain: text('grain', { enum: metricGrains }).notNull(),
    periodStart: ts('period_start').notNull(),
    channelId: uuid('channel_id').notNull(),
    agentId: text('agent_id').notNull(),
    /** The team of dims 4..7; the zero uuid for the others. */
    teamId: uuid('team_id').notNull().default('00000000-0000-0000-0000-000000000000'),
    kind: text('kind', { enum: metricKinds }).notNull(),
    /**
     * The histogram bucket of a duration (src/analytics/histogram.ts); -1 for the other kinds, and
     * for a duration in the dims with the agent bit (its buckets are in `hist`).
     */
    bucket: smallint('bucket').notNull(),
    slot: smallint('slot').notNull(),
    n: bigint('n', { mode: 'number' }).notNull().default(0),
    total: doublePrecision('total').notNull().default(0),
    /**
     * A duration in the dims with the agent bit: bucket -> samples (a JSON object, no zero
     * entries; metric_hist_add() in migration issue31_hist_json merges two); null otherwise.
     * `json`, not `jsonb`: a read passes these objects through as text, and jsonb's conversion to
     * text (every number a numeric) was most of /analytics/agents (docs/analytics.md).
     */
    hist: json('hist').$type<Record<string, number>>(),
  },
  // serves: every analytics read: (workspace, dim, grain, period) equality per piece of a range
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.dim, t.grain, t.periodStart, t.channelId, t.agentId, t.teamId, t.kind, t.bucket, t.slot] }),
  ],
)

/**
 * One satisfaction rating per conversation (API.md section 14), replaced in place within 14 days
 * of created_at. Written only by rateConversation (src/support/csat.ts), in one transaction.
 */
export const csatRatings = pgTable(
  'csat_ratings',
  {
    conversationId: uuid('conversation_id').primaryKey().references(() => conversations.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    channelId: uuid('channel_id').notNull(),
    guestId: uuid('guest_id').notNull(),
    rating: smallint('rating').notNull(),
    comment: text('comment'),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    check('csat_rating_range', sql`${t.rating} BETWEEN 1 AND 5`),
    // serves: analytics aggregates of ratings by workspace and time
    index('csat_workspace_updated_idx').on(t.workspaceId, t.updatedAt),
  ],
)

/** Workspace labels (API.md section 17); conversations hold their ids in `conversations.label_ids`. */
export const labels = pgTable(
  'labels',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** #rrggbb, lower-cased. */
    color: text('color').notNull(),
    description: text('description').notNull().default(''),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // serves: LABEL_NAME_TAKEN (case-insensitive) and GET /labels (by name)
    uniqueIndex('labels_workspace_name_uq').on(t.workspaceId, sql`lower(${t.name})`),
  ],
)

/** Saved views (API.md section 17): a named set of list filters, personal or for the workspace. */
export const views = pgTable(
  'views',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    scope: text('scope', { enum: viewScopes }).notNull(),
    /** The creator's userId; a personal view is visible to this member only. */
    ownerId: text('owner_id').notNull(),
    name: text('name').notNull(),
    /** The list parameters as JSON (schemas/triage.ts ViewFilters), checked at write. */
    filters: jsonb('filters').notNull().default(sql`'{}'::jsonb`),
    sortBy: text('sort_by').notNull(),
    sortOrder: text('sort_order').notNull(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // serves: GET /views (the workspace's and the caller's own), the 100-per-owner and per-workspace caps
    index('views_workspace_idx').on(t.workspaceId, t.scope, t.ownerId, t.createdAt, t.id),
  ],
)

/** Teams (API.md section 16, src/teams/). */
export const teams = pgTable(
  'teams',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description'),
    assignment: text('assignment', { enum: teamAssignments }).notNull().default('manual'),
    /** OPEN conversations a member may hold before routing skips them; null: no limit. */
    capacity: integer('capacity'),
    private: boolean('private').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // serves: GET /teams (by name), TEAM_NAME_TAKEN (case-insensitive)
    uniqueIndex('teams_name_uq').on(t.workspaceId, sql`lower(${t.name})`),
  ],
)

export const teamMembers = pgTable(
  'team_members',
  {
    teamId: uuid('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    userId: text('user_id').notNull(),
    /** Overrides the team's capacity; null: the team's. */
    capacity: integer('capacity'),
    /** The last automatic assignment to this member in this team: round_robin's stored order. */
    lastAssignedAt: ts('last_assigned_at'),
    joinedAt: ts('joined_at').notNull().defaultNow(),
  },
  (t) => [
    // serves: a team's members (routing, the team view)
    primaryKey({ columns: [t.teamId, t.userId] }),
    // serves: a member's teams (routing when they come online or free a slot, private-team visibility)
    index('team_members_user_idx').on(t.workspaceId, t.userId),
  ],
)

/**
 * Each time a conversation left a team's queue for an assignee (automatically or by hand): the
 * visitor's estimatedWaitSeconds is the median wait of the last 24 hours.
 */
export const queueExits = pgTable(
  'queue_exits',
  {
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    teamId: uuid('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
    conversationId: uuid('conversation_id').notNull(),
    waitSeconds: doublePrecision('wait_seconds').notNull(),
    at: createdAt(),
  },
  // serves: estimatedWaitSeconds (the team's exits of the last 24 hours)
  (t) => [index('queue_exits_team_idx').on(t.teamId, t.at)],
)

/**
 * SLA policies (API.md section 18, src/sla/policies.ts). The targets are minutes (null: not
 * measured); business_hours is null (round the clock) or the calculator's BusinessHours
 * (src/sla/business-time.ts); applies_to lists are empty to match everything.
 */
export const slaPolicies = pgTable(
  'sla_policies',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id').notNull().references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    firstResponseMinutes: integer('first_response_minutes'),
    nextResponseMinutes: integer('next_response_minutes'),
    resolutionMinutes: integer('resolution_minutes'),
    businessHours: jsonb('business_hours'),
    channelIds: uuid('channel_ids').array().notNull().default(sql`'{}'::uuid[]`),
    teamIds: uuid('team_ids').array().notNull().default(sql`'{}'::uuid[]`),
    priorities: text('priorities').array().notNull().default(sql`'{}'::text[]`),
    position: integer('position').notNull(),
    createdAt: createdAt(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  // serves: GET /sla-policies and matching (the first by position, then createdAt)
  (t) => [index('sla_policies_workspace_idx').on(t.workspaceId, t.position, t.createdAt, t.id)],
)

/**
 * The open targets of each conversation under its policy (src/sla/clock.ts computes them from the
 * conversation's history; src/sla/sync.ts keeps these rows equal to that, under the row lock). A
 * met or stopped target has no row. due_at is null while the clocks stop (PENDING, SNOOZED).
 */
export const slaTargetRows = pgTable(
  'sla_targets',
  {
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    target: text('target', { enum: slaTargets }).notNull(),
    /** The target's cycle: 0 for first response, the reopen number for resolution, the guest message's ordinal for next response. */
    cycle: integer('cycle').notNull(),
    policyId: uuid('policy_id').notNull(),
    startedAt: ts('started_at').notNull(),
    dueAt: ts('due_at'),
    /** The breach sweep recorded its breach (it stays running, overdue, until met or stopped). */
    breached: boolean('breached').notNull().default(false),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.target, t.cycle] }),
    // serves: the breach sweep (running targets due now, oldest first; breached ones left out)
    index('sla_targets_due_idx').on(t.dueAt).where(sql`${t.dueAt} IS NOT NULL AND NOT ${t.breached}`),
  ],
)

/** Each breach, recorded once per conversation, target, cycle and policy (src/sla/sweep.ts). */
export const slaBreaches = pgTable(
  'sla_breaches',
  {
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    target: text('target', { enum: slaTargets }).notNull(),
    cycle: integer('cycle').notNull(),
    policyId: uuid('policy_id').notNull(),
    dueAt: ts('due_at').notNull(),
    breachedAt: ts('breached_at').notNull().defaultNow(),
  },
  // serves: the once-only insert (ON CONFLICT DO NOTHING) and a conversation's `breaches`
  (t) => [primaryKey({ columns: [t.conversationId, t.policyId, t.target, t.cycle] })],
)

/**
 * Each status a conversation entered, with its time (written by mutateConversation and
 * insertConversation): the history the SLA clock is recomputed from (pauses, closes, reopens).
 */
export const conversationStatusLog = pgTable(
  'conversation_status_log',
  {
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    at: ts('at').notNull(),
    status: text('status', { enum: conversationStatus }).notNull(),
  },
  // serves: a conversation's history, in order
  (t) => [primaryKey({ columns: [t.conversationId, t.at, t.status] })],
)

/**
 * The mail headers of each message that came in or went out by e-mail (API.md section 19), one
 * row per message: inbound writes 'in' rows with the mail's own headers, outbound writes an
 * 'out' row in the reply's transaction with the Message-ID it will be sent under (fixed before
 * the first attempt, so a resend is the same mail). Threading looks a header up by channel.
 * Message-IDs are stored without the angle brackets.
 */
export const messageEmails = pgTable(
  'message_emails',
  {
    messageId: uuid('message_id').primaryKey().references(() => messages.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    channelId: uuid('channel_id').notNull().references(() => channels.id, { onDelete: 'cascade' }),
    conversationId: uuid('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    direction: text('direction', { enum: emailDirections }).notNull(),
    /** The mail's Message-ID, without <>. */
    messageIdHeader: text('message_id_header').notNull(),
    /** In-Reply-To, without <> (null: none). */
    inReplyTo: text('in_reply_to'),
    /** References, oldest first, each without <>. */
    references: text('references').array().notNull().default(sql`'{}'::text[]`),
    createdAt: createdAt(),
  },
  (t) => [
    // serves: threading (In-Reply-To / References name a mail of this channel) and the inbound
    // duplicate check (a Message-ID seen twice is stored once)
    uniqueIndex('message_emails_header_uq').on(t.channelId, t.messageIdHeader),
    // serves: outbound headers (the newest inbound mail, the thread's Message-IDs)
    index('message_emails_conversation_idx').on(t.conversationId, t.createdAt),
  ],
)

/**
 * An e-mail channel's mailbox reader (src/email/reader.ts, docs/email.md "The lease"): the lease
 * that lets exactly one process read the mailbox across replicas (`holder`, renewed before
 * `lease_expires_at`; another process takes an expired one), and the place it has reached
 * (UIDVALIDITY and the last UID imported), advanced in the same transaction as each import, so
 * a restart or a takeover neither skips nor repeats mail. No row until a reader first claims the
 * channel; `last_uid` null until it first opened the mailbox.
 */
export const emailMailboxes = pgTable(
  'email_mailboxes',
  {
    channelId: uuid('channel_id').primaryKey().references(() => channels.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    /** The process holding the lease (a random id per reader start); null: free. */
    holder: text('holder'),
    leaseExpiresAt: ts('lease_expires_at'),
    uidValidity: bigint('uid_validity', { mode: 'number' }),
    lastUid: bigint('last_uid', { mode: 'number' }),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
)
