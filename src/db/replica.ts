import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import { createSql, type Pool } from './client.js'

/**
 * Reads that tolerate a little staleness (searches, analytics, the CSV export, the visitors list)
 * go to a streaming replica when DATABASE_READ_URL names one (API.md section 20); every other read
 * stays on the primary, so what a member just wrote is what they read back.
 *
 * The replica is used while it is `online`: it answers, and its replay is at most
 * DATABASE_READ_MAX_LAG_S behind what the primary has written. Lag is measured against the
 * primary's WAL position, sampled every CHECK_MS: the replica has replayed up to L; the first
 * sample whose position passed L was taken at T; lag = now - T (0 when L has reached the
 * primary's position: an idle primary means no lag). A pause of replay, a broken stream or a slow
 * replica all show as lag; one that does not answer within the timeout is `down`. Both send the
 * reads back to the primary until a later check finds it online again.
 */
export type ReplicaState = 'online' | 'lagging' | 'down'

export interface Reads {
  /** Runs `fn` on the replica's pool (main or search) while it is online, else on the primary's; a connection failure on the replica marks it down and runs `fn` on the primary. */
  run<T>(which: 'main' | 'search', fn: (pool: Pool) => Promise<T>): Promise<T>
  /** Checks the replica now (the health probe), within `timeoutMs`; null without DATABASE_READ_URL. */
  probe(timeoutMs: number): Promise<ReplicaState> | null
  close(): Promise<void>
}

/** No replica: every read on the primary's pools. */
export function primaryReads(sql: Pool, searchSql: Pool): Reads {
  return {
    run: (which, fn) => fn(which === 'search' ? searchSql : sql),
    probe: () => null,
    close: async () => {},
  }
}

const CHECK_MS = 1000
/** One a second at most: more than an hour of them. */
const MAX_SAMPLES = 4000
/** Errors that say the server is unreachable or going away (not a query's own fault). */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', '57P01', '57P02', '57P03'])
const isConnectionError = (err: unknown) => {
  const code = String((err as { code?: string }).code ?? '')
  return CONNECTION_CODES.has(code) || code.startsWith('08')
}

/** "16/B374D848" -> a bigint. */
export function parseLsn(lsn: string): bigint {
  const [hi, lo] = lsn.split('/')
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`)
}

/** The lag in ms from the primary's samples (oldest first) and the replica's replay position. */
export function lagMs(samples: readonly { at: number; lsn: bigint }[], replayed: bigint, now: number): number {
  const behind = samples.find((s) => s.lsn > replayed)
  return behind ? Math.max(0, now - behind.at) : 0
}

/** The replica's pools are made like the primary's: `searchSettings` and `prepare` as src/deps.ts chose. */
export function replicaReads(config: Config, primary: Pool, primarySearch: Pool, log: Log, opts: { prepare: boolean; searchSettings: Record<string, string> }): Reads {
  const { prepare } = opts
  const url = config.DATABASE_READ_URL!
  const sql = createSql(url, config.DATABASE_POOL_MAX, {}, prepare)
  const searchSql = createSql(url, config.DATABASE_SEARCH_POOL_MAX, opts.searchSettings, prepare)
  // The check's own connection, so a queue of reads never delays it.
  const probeSql = createSql(url, 1, {}, prepare)
  const maxLagMs = config.DATABASE_READ_MAX_LAG_S * 1000
  let state: ReplicaState = 'down'
  const samples: { at: number; lsn: bigint }[] = []

  const set = (next: ReplicaState, why?: string) => {
    if (next !== state) log[next === 'online' ? 'info' : 'warn']({ replica: next, why }, `read replica ${next}`)
    state = next
  }
  const check = async (timeoutMs: number): Promise<ReplicaState> => {
    let timer: NodeJS.Timeout | undefined
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      })
      const [[p], [r]] = await Promise.race([
        Promise.all([
          primary<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`,
          probeSql<{ lsn: string | null }[]>`SELECT pg_last_wal_replay_lsn()::text AS lsn`,
        ]),
        timeout,
      ])
      const now = Date.now()
      const written = parseLsn(p!.lsn)
      if (!samples.length || samples[samples.length - 1]!.lsn !== written) samples.push({ at: now, lsn: written })
      // null: not a standby (a promoted replica, or a primary by mistake): no replay to wait for.
      const replayed = r!.lsn === null ? written : parseLsn(r!.lsn)
      // Samples the replica has passed are not needed any more (the last one stays).
      while (samples.length > 1 && samples[0]!.lsn <= replayed) samples.shift()
      // A replica stuck for hours: the oldest samples go (what is left is still older than any
      // allowed lag, DATABASE_READ_MAX_LAG_S <= 3600), so memory stays bounded.
      if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES)
      const lag = lagMs(samples, replayed, now)
      set(lag > maxLagMs ? 'lagging' : 'online', lag > maxLagMs ? `replay ${Math.round(lag / 1000)} s behind` : undefined)
    } catch (err) {
      set('down', (err as Error).message)
    } finally {
      clearTimeout(timer)
    }
    return state
  }
  let checking: Promise<ReplicaState> | null = null
  const checkOnce = (timeoutMs: number) => (checking ??= check(timeoutMs).finally(() => (checking = null)))
  void checkOnce(config.HEALTH_TIMEOUT_MS)
  const timer = setInterval(() => void checkOnce(config.HEALTH_TIMEOUT_MS), CHECK_MS)
  timer.unref()

  return {
    async run(which, fn) {
      const fallback = which === 'search' ? primarySearch : primary
      if (state !== 'online') return fn(fallback)
      try {
        return await fn(which === 'search' ? searchSql : sql)
      } catch (err) {
        if (!isConnectionError(err)) throw err
        set('down', (err as Error).message)
        return fn(fallback)
      }
    },
    probe: (timeoutMs) => checkOnce(timeoutMs),
    async close() {
      clearInterval(timer)
      await Promise.all([sql.end({ timeout: 5 }), searchSql.end({ timeout: 5 }), probeSql.end({ timeout: 1 })])
    },
  }
}
