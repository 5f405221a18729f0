import type { Sql } from '../src/db/client.js'
import { pageRows, resolveList, sectionQuery, type ListQuery, type SectionRow } from '../src/conversations/lists.js'

/**
 * Page 1 of GET /conversations (OPEN, pinned first, newest lastMessageAt first, default limit)
 * as the route runs it, minus everything around the SQL: src/conversations/lists.ts' own
 * sectionQuery for the pinned section, then for the unpinned one while the page is not full (one
 * row more than the page, to know whether another page exists), then pageRows (the rows by id when
 * the list reads its keys apart: the label and team filters), exactly as listConversations does. The raw-SQL ceiling server runs this
 * with no auth, validation, mapping, cursor or response schema: the database's limit for that endpoint.
 */
export async function listPageOne(sql: Sql, workspaceId: string, limit = 20, query: Partial<ListQuery> = {}) {
  // `query`: section 17's parameters (labelIds, sortBy=priority), for the triage ceilings.
  const r = resolveList('open', { workspaceId, userId: 'bench|ceiling' }, { ...query, limit })
  const want = limit + 1
  const keys: SectionRow[] = []
  for (const pinned of [true, false]) {
    if (keys.length >= want) break
    keys.push(...(await sectionQuery(sql, r, { pinned }, want - keys.length)))
  }
  const rows = await pageRows(sql, r, keys.slice(0, limit))
  return { rows: rows.flatMap((k) => (k.row ? [k.row] : [])), more: keys.length > limit }
}

/** The keys query for the page after a cursor key [pinned, sortValue, id] (EXPLAIN of the deep page). */
export function listSectionAfter(sql: Sql, workspaceId: string, key: [boolean, string, string], limit = 20) {
  const r = resolveList('open', { workspaceId, userId: 'bench|ceiling' }, { limit })
  return sectionQuery(sql, r, { pinned: key[0], after: { t: key[1], id: key[2] } }, limit + 1)
}
