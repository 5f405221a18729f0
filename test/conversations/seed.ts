import { randomBytes } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import type { App } from '../../src/app.js'
import type { SeededWorkspace } from '../helper.js'

/**
 * Fixtures for the list tests: conversations, guests and messages written straight into the
 * database with chosen timestamps (to the microsecond), pinned flags, statuses, assignments,
 * unread counts and deleted_at, so the lists can be checked against a reference order in JS.
 */

/** Microseconds since the epoch -> Postgres timestamptz text in UTC ("2026-11-21 10:00:00.123456+00"). */
export function pgTime(micros: number): string {
  const ms = Math.floor(micros / 1000)
  const us = String(micros % 1000).padStart(3, '0')
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', `${us}+00`)
}

/** A base instant for seeds: 2026-11-21T10:00:00Z in microseconds. */
export const BASE_US = Date.UTC(2026, 10, 21, 10, 0, 0) * 1000

export interface SeedConversation {
  id?: string
  channelId?: string
  guestId?: string
  status?: 'OPEN' | 'RESOLVED' | 'CLOSED'
  pinned?: boolean
  assignedAgentId?: string | null
  unreadCount?: number
  /** Microseconds since the epoch (pgTime) or raw text. */
  lastMessageAt?: number | string
  createdAt?: number | string
  updatedAt?: number | string
  closedAt?: number | string | null
  deletedAt?: number | string | null
  lastMessagePreview?: string | null
}

export interface SeededConversation {
  id: string
  workspaceId: string
  channelId: string
  guestId: string
  status: 'OPEN' | 'RESOLVED' | 'CLOSED'
  pinned: boolean
  assignedAgentId: string | null
  unreadCount: number
  lastMessageAt: number
  createdAt: number
  updatedAt: number
  /** null stays null in the database. */
  closedAt: number | null
  deletedAt: number | null
}

const toMicros = (v: number | string): number => {
  if (typeof v === 'number') return v
  const [, frac = ''] = /\.(\d+)/.exec(v) ?? []
  return Date.parse(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00').replace(/\.\d+/, '')) * 1000 + Number(frac.padEnd(6, '0'))
}

/** A guest on the workspace's channel (no session); returns its id. */
export async function insertGuest(app: App, ws: Pick<SeededWorkspace, 'workspaceId' | 'channelId'>, name = 'Gus Guest'): Promise<string> {
  const id = uuidv7()
  await app.deps.sql`INSERT INTO guests (id, workspace_id, channel_id, name, email)
    VALUES (${id}, ${ws.workspaceId}, ${ws.channelId}, ${name}, ${`g-${randomBytes(4).toString('hex')}@example.test`})`
  return id
}

/** Another channel in the workspace; returns its id. */
export async function insertChannel(app: App, workspaceId: string, name = 'Second'): Promise<string> {
  const id = uuidv7()
  await app.deps.sql`INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
    VALUES (${id}, ${workspaceId}, ${name}, ${`ct_${randomBytes(12).toString('hex')}`}, ${`is_${randomBytes(12).toString('hex')}`})`
  return id
}

/**
 * Inserts conversations in one statement. Defaults: the workspace's channel, one new guest for
 * all of them, OPEN, unpinned, unassigned, no unread, every timestamp BASE_US.
 */
export async function insertConversations(
  app: App,
  ws: Pick<SeededWorkspace, 'workspaceId' | 'channelId'>,
  specs: SeedConversation[],
): Promise<SeededConversation[]> {
  if (specs.length === 0) return []
  const needGuest = specs.some((s) => !s.guestId)
  const defaultGuest = needGuest ? await insertGuest(app, ws) : ''
  const out: SeededConversation[] = specs.map((s) => {
    const status = s.status ?? 'OPEN'
    const created = s.createdAt ?? BASE_US
    return {
      id: s.id ?? uuidv7(),
      workspaceId: ws.workspaceId,
      channelId: s.channelId ?? ws.channelId,
      guestId: s.guestId ?? defaultGuest,
      status,
      pinned: s.pinned ?? false,
      assignedAgentId: s.assignedAgentId ?? null,
      unreadCount: s.unreadCount ?? 0,
      lastMessageAt: toMicros(s.lastMessageAt ?? created),
      createdAt: toMicros(created),
      updatedAt: toMicros(s.updatedAt ?? created),
      closedAt: s.closedAt === undefined ? (status === 'OPEN' ? null : toMicros(created)) : s.closedAt === null ? null : toMicros(s.closedAt),
      deletedAt: s.deletedAt == null ? null : toMicros(s.deletedAt),
    }
  })
  const rows = out.map((c, i) => ({
    id: c.id,
    workspace_id: c.workspaceId,
    channel_id: c.channelId,
    guest_id: c.guestId,
    status: c.status,
    pinned: c.pinned,
    assigned_agent_id: c.assignedAgentId,
    unread_count: c.unreadCount,
    last_message_at: pgTime(c.lastMessageAt),
    last_message_preview: specs[i]!.lastMessagePreview ?? null,
    created_at: pgTime(c.createdAt),
    updated_at: pgTime(c.updatedAt),
    closed_at: c.closedAt === null ? null : pgTime(c.closedAt),
    deleted_at: c.deletedAt === null ? null : pgTime(c.deletedAt),
  }))
  // Chunks keep each statement under postgres' parameter limit.
  for (let i = 0; i < rows.length; i += 2000) {
    await app.deps.sql`INSERT INTO conversations ${app.deps.sql(rows.slice(i, i + 2000))}`
  }
  return out
}

/** A guest message in the conversation (moves nothing else: counters are the seed's business). */
export async function insertMessage(
  app: App,
  conv: Pick<SeededConversation, 'id' | 'workspaceId' | 'guestId'>,
  body: string,
  at: number = BASE_US,
): Promise<string> {
  const id = uuidv7()
  await app.deps.sql`INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    VALUES (${id}, ${conv.workspaceId}, ${conv.id}, 'GUEST', ${conv.guestId}, 'Guest', ${body}, ${pgTime(at)})`
  return id
}

/** Reference order of the lists, in JS: what the API must return, page after page. */
export type SortKey = 'lastMessageAt' | 'createdAt' | 'updatedAt' | 'closedAt'

export function sortValue(c: SeededConversation, sortBy: SortKey): number {
  if (sortBy === 'closedAt') return c.closedAt ?? Number.NEGATIVE_INFINITY
  return c[sortBy]
}

export function referenceOrder(rows: SeededConversation[], sortBy: SortKey, sortOrder: 'asc' | 'desc', pinnedFirst: boolean): SeededConversation[] {
  const sign = sortOrder === 'desc' ? -1 : 1
  return [...rows].sort((a, b) => {
    if (pinnedFirst && a.pinned !== b.pinned) return a.pinned ? -1 : 1
    const ta = sortValue(a, sortBy)
    const tb = sortValue(b, sortBy)
    if (ta !== tb) return ta < tb ? -sign : sign
    return a.id < b.id ? -sign : a.id > b.id ? sign : 0
  })
}
