import type { Sql } from '../db/client.js'
import type { channels } from '../db/schema.js'

/** What a visitor session's validity depends on: its channel's state. */
/** Sessions signed under an older `sessionEpoch` are revoked (bumped when the channel is deactivated). */
export type ChannelSessionState = Pick<typeof channels.$inferSelect, 'active' | 'sessionEpoch'>

/**
 * Channel state for every visitor request, cached in memory like memberships (MEMBER_CACHE_TTL_MS,
 * default 2 s): a hit costs a Map lookup, a miss one primary-key read. A change made through this
 * replica invalidates its entry at once; other replicas see it when their entry expires, so a
 * deactivated channel's sessions are refused everywhere within the TTL (API.md section 5).
 */
export class ChannelSessions {
  private cache = new Map<string, { at: number; state: ChannelSessionState | null }>()

  constructor(
    private sql: Sql,
    private ttlMs: number,
    private maxEntries = 10_000,
  ) {}

  async get(channelId: string): Promise<ChannelSessionState | null> {
    const hit = this.cache.get(channelId)
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.state
    const [row] = await this.sql<ChannelSessionState[]>`
      SELECT active, session_epoch AS "sessionEpoch" FROM channels WHERE id = ${channelId}`
    const state = row ?? null
    if (this.ttlMs > 0) {
      if (this.cache.size >= this.maxEntries) this.cache.clear()
      this.cache.set(channelId, { at: Date.now(), state })
    }
    return state
  }

  invalidate(channelId: string): void {
    this.cache.delete(channelId)
  }
}
