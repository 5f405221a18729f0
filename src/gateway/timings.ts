import type { Config } from '../config.js'

/**
 * The interval between heartbeats, and how long a socket entry stays live after one. An entry
 * lives two heartbeats less than the TTL: a live gateway refreshes it with at least one
 * heartbeat to spare (a stalled event loop does not flap members offline), and a dead gateway's
 * entries expire and are swept (every gateway sweeps each heartbeat) within PRESENCE_TTL_S,
 * with a heartbeat to spare for timer drift.
 */
export function presenceTimings(config: Config) {
  const ttlMs = config.PRESENCE_TTL_S * 1000
  const heartbeatMs = config.PRESENCE_HEARTBEAT_MS ?? Math.min(10_000, Math.floor(ttlMs / 5))
  return { heartbeatMs, entryTtlMs: ttlMs - 2 * heartbeatMs }
}

/**
 * visitor:updated debouncing (API.md section 2): at most one a second per guest; the offline
 * announcement of a disconnect waits this long and a reconnection within it announces nothing.
 */
export const visitorAnnouncements = { minIntervalMs: 1000, offlineDelayMs: 5000 }
