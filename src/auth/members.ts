import { and, eq } from 'drizzle-orm'
import type { Db } from '../db/client.js'
import { members } from '../db/schema.js'
import type { Role } from './permissions.js'

export interface MemberRecord {
  workspaceId: string
  userId: string
  name: string
  email: string
  role: Role
  status: 'active' | 'disabled'
}

/**
 * Membership lookups for every member request, cached in memory for a short TTL
 * (MEMBER_CACHE_TTL_MS, default 2 s). A change made through this replica invalidates its entry at
 * once; other replicas see it when their entry expires, so a removed or disabled member loses
 * access everywhere within the TTL.
 */
export class MemberDirectory {
  private cache = new Map<string, { at: number; record: MemberRecord | null }>()

  constructor(
    private db: Db,
    private ttlMs: number,
    private maxEntries = 10_000,
  ) {}

  async get(workspaceId: string, userId: string): Promise<MemberRecord | null> {
    const key = `${workspaceId}\u0000${userId}`
    const hit = this.cache.get(key)
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.record
    const [row] = await this.db
      .select({
        workspaceId: members.workspaceId,
        userId: members.userId,
        name: members.name,
        email: members.email,
        role: members.role,
        status: members.status,
      })
      .from(members)
      .where(and(eq(members.workspaceId, workspaceId), eq(members.userId, userId)))
      .limit(1)
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
