import { ChannelSessions } from './auth/channel-sessions.js'
import { MemberDirectory } from './auth/members.js'
import { createMemberVerifier, createVisitorTokens, type MemberVerifier } from './auth/tokens.js'
import type { Config } from './config.js'
import type { Deps } from './context.js'
import type { Log } from './logger.js'
import { createProviderBVerifier } from './billing/provider-b.js'
import { createCursorCodec } from './cursor.js'
import { createSql } from './db/client.js'
import { createJobs } from './jobs.js'
import { createMailer } from './mail.js'
import { createSharedState } from './mode.js'
import { queues } from './queues.js'
import { SEARCH_SESSION } from './search/search.js'
import { createStorage } from './storage/storage.js'

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
  const sql = createSql(config.DATABASE_URL, config.DATABASE_POOL_MAX)
  const searchSql = createSql(config.DATABASE_URL, config.DATABASE_SEARCH_POOL_MAX, SEARCH_SESSION)
  const mailer = createMailer(config, log)
  let jobs
  let shared
  try {
    shared = await createSharedState(config, log)
    jobs = await createJobs(config, log, queues)
  } catch (err) {
    await Promise.allSettled([shared?.close(), sql.end({ timeout: 1 }), searchSql.end({ timeout: 1 })])
    mailer.close()
    throw err
  }
  const deps: Deps = {
    config,
    log,
    sql,
    searchSql,
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
    storage: createStorage(config),
  }
  if (config.JOBS_WORKER) await jobs.startWorkers(deps)
  return {
    deps,
    drain: () => jobs.stop(),
    async close() {
      mailer.close()
      deps.storage.close()
      await shared.close()
      await Promise.all([sql.end({ timeout: 5 }), searchSql.end({ timeout: 5 })])
    },
  }
}
