import { createThumbnailMaker } from './attachments/thumbnails.js'
import { ChannelSessions } from './auth/channel-sessions.js'
import { MemberDirectory } from './auth/members.js'
import { createMemberVerifier, createVisitorTokens, type MemberVerifier } from './auth/tokens.js'
import type { Config } from './config.js'
import type { Deps } from './context.js'
import type { Log } from './logger.js'
import { createProviderBVerifier } from './billing/provider-b.js'
import { createCursorCodec } from './cursor.js'
import { createSql } from './db/client.js'
import { primaryReads, replicaReads } from './db/replica.js'
import { createJobs } from './jobs.js'
import { createMailer } from './mail.js'
import { createSharedState } from './mode.js'
import { queues } from './queues.js'
import { SEARCH_SESSION } from './search/search.js'
import { createStorage } from './storage/storage.js'
import { createMailReaders } from './email/reader.js'
import { createRouter } from './teams/scheduler.js'
import { startSnoozeSweeper } from './triage/wake.js'
import type { Sweeper } from './sweeper.js'
import { startBreachSweeper } from './sla/breaches.js'

export interface Runtime {
  deps: Deps
  /** Before the server stops: stop taking jobs, let an active one finish while the pool is open. */
  drain(): Promise<void>
  /** After the last request: close the pool, Redis and the mail transport. */
  close(): Promise<void>
}

/**
 * Builds the process's infrastructure from the configuration: what the API (plugins/deps.ts
 * wraps this), a script, the benchmark or a test hands to domain code. Start-up needs PostgreSQL
 * (jobs) and, unless in single-process mode, Redis (src/mode.ts chooses); with JOBS_WORKER this
 * process also runs the queues' workers. DATABASE_URL is a postgres:// URL here: an embedded
 * database was started by the entry point (src/mode.ts, provideDatabase). The API passes its
 * member verifier (plugins/jwt.ts).
 */
export async function createDeps(config: Config, log: Log, parts: { memberTokens?: MemberVerifier } = {}): Promise<Runtime> {
  // Behind a transaction pooler: no named statements, and the search settings per transaction
  // (src/search/search.ts runSearch), since PgBouncer refuses unknown startup parameters.
  const pooled = config.DATABASE_POOLER === 'transaction'
  const sql = createSql(config.DATABASE_URL, config.DATABASE_POOL_MAX, {}, !pooled)
  const searchSettings = pooled ? {} : SEARCH_SESSION
  const searchSql = createSql(config.DATABASE_URL, config.DATABASE_SEARCH_POOL_MAX, searchSettings, !pooled)
  const routingSql = createSql(config.DATABASE_URL, config.DATABASE_ROUTING_POOL_MAX, {}, !pooled)
  const reads = config.DATABASE_READ_URL ? replicaReads(config, sql, searchSql, log, { prepare: !pooled, searchSettings }) : primaryReads(sql, searchSql)
  const mailer = createMailer(config, log)
  let jobs
  let shared
  try {
    shared = await createSharedState(config, log)
    jobs = await createJobs(config, log, queues)
  } catch (err) {
    await Promise.allSettled([shared?.close(), reads.close(), sql.end({ timeout: 1 }), searchSql.end({ timeout: 1 }), routingSql.end({ timeout: 1 })])
    mailer.close()
    throw err
  }
  // The router routes on its own pool (DATABASE_ROUTING_POOL_MAX), so a pass never queues behind
  // the requests for a connection (docs/routing.md, "Latency").
  const routing = createRouter(config, () => ({ sql: routingSql, presence: shared.presence, events: shared.events, log }))
  const mailReaders = createMailReaders(config, () => deps)
  const deps: Deps = {
    config,
    log,
    sql,
    searchSql,
    reads,
    shared,
    events: shared.events,
    presence: shared.presence,
    jobs: jobs.jobs,
    mailer,
    // The API's comes from @fastify/jwt (plugins/jwt.ts); elsewhere fast-jwt on the same options.
    memberTokens: parts.memberTokens ?? createMemberVerifier(config),
    visitorTokens: createVisitorTokens(config),
    memberDirectory: new MemberDirectory(sql, config.MEMBER_CACHE_TTL_MS),
    channelSessions: new ChannelSessions(sql, config.MEMBER_CACHE_TTL_MS),
    rateWindows: shared.rateWindows,
    cursor: createCursorCodec(config),
    providerB: createProviderBVerifier(config, log),
    storage: await createStorage(config, log),
    thumbnails: createThumbnailMaker(config.THUMBNAIL_CONCURRENCY),
    routing,
    mailReaders,
  }
  let sweeper: Sweeper | null = null
  let slaSweeper: Sweeper | null = null
  if (config.JOBS_WORKER) {
    await jobs.startWorkers(deps)
    sweeper = startSnoozeSweeper(deps, config.SNOOZE_SWEEP_INTERVAL_MS)
    slaSweeper = startBreachSweeper(deps, config.SLA_SWEEP_INTERVAL_MS)
    mailReaders.start()
  }
  routing.start(shared.signals)
  return {
    deps,
    drain: async () => {
      await routing.stop()
      await mailReaders.stop()
      await sweeper?.stop()
      await slaSweeper?.stop()
      await jobs.stop()
    },
    async close() {
      mailer.close()
      deps.storage.close()
      await shared.close()
      await Promise.all([sql.end({ timeout: 5 }), searchSql.end({ timeout: 5 }), routingSql.end({ timeout: 5 }), reads.close()])
    },
  }
}
