import type { Sql } from '../src/db/client.js'
import { pageKeys, pageRows, pageSections, resolveList, sectionQuery, type ListQuery } from '../src/conversations/lists.js'

/**
 * Page 1 of GET /conversations (OPEN, pinned first, newest lastMessageAt first, default limit)
 * as the route runs it, minus everything around the SQL: src/conversations/lists.ts' own pageKeys
 * (one backward scan for a descending list, the pinned then the unpinned section for an ascending
 * one, one row more than the page to know whether another page exists), then pageRows (the rows by
 * id when the list reads its keys apart: the label and team filters), exactly as listConversations does. The raw-SQL ceiling server runs this
 * with no auth, validation, mapping, cursor or response schema: the database's limit for that endpoint.
 */
export async function listPageOne(sql: Sql, workspaceId: string, limit = 20, query: Partial<ListQuery> = {}) {
  // `query`: section 17's parameters (labelIds, sortBy=priority), for the triage ceilings.
  const r = resolveList('open', { workspaceId, userId: 'bench|ceiling' }, { ...query, limit })
  const keys = await pageKeys(sql, r, undefined, limit + 1)
  const rows = await pageRows(sql, r, keys.slice(0, limit))
  return { rows: rows.flatMap((k) => (k.row ? [k.row] : [])), more: keys.length > limit }
}

/** The keys query for the page after a cursor key [pinned, sortValue, id] (EXPLAIN of the deep page). */
export function listSectionAfter(sql: Sql, workspaceId: string, key: [boolean, string, string], limit = 20) {
  const r = resolveList('open', { workspaceId, userId: 'bench|ceiling' }, { limit })
  const [section] = pageSections(r, { pinned: key[0], t: key[1], id: key[2] })
  return sectionQuery(sql, r, section!, limit + 1)
}
