import type { Sql } from '../db/client.js'
import type { members } from '../db/schema.js'

export type MemberRecord = Pick<typeof members.$inferSelect, 'workspaceId' | 'userId' | 'name' | 'email' | 'role' | 'status'>

/**
 * Membership lookups for every member request, cached in memory for a short TTL
 * (MEMBER_CACHE_TTL_MS, default 2 s). A change made through this replica invalidates its entry at
 * once; other replicas see it when their entry expires, so a removed or disabled member loses
 * access everywhere within the TTL.
 */
export class MemberDirectory {
  private cache = new Map<string, { at: number; record: MemberRecord | null }>()

  constructor(
    private sql: Sql,
    private ttlMs: number,
    private maxEntries = 10_000,
  ) {}

  async get(workspaceId: string, userId: string): Promise<MemberRecord | null> {
    const key = `${workspaceId}\u0000${userId}`
    const hit = this.cache.get(key)
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.record
    const [row] = await this.sql<MemberRecord[]>`
      SELECT workspace_id AS "workspaceId", user_id AS "userId", name, email, role, status
      FROM members WHERE workspace_id = ${workspaceId} AND user_id = ${userId}`
    const record = row ?? null
    if (this.ttlMs > 0) {
      if (this.cache.size >= this.maxEntries) this.cache.clear()
      this.cache.set(key, { at: Date.now(), record })
    }
    return record
  }

  invalidate(workspaceId: string, userId: string): void {
    this.cache.delete(`${workspaceId}\u0000${userId}`)
  }
}
