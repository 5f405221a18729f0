import { ChannelSessions } from './auth/channel-sessions.js'
import { MemberDirectory } from './auth/members.js'
import { createMemberVerifier, createVisitorTokens } from './auth/tokens.js'
import type { Config } from './config.js'
import type { Deps, Log } from './context.js'
import { createProviderBVerifier } from './billing/provider-b.js'
import { createCursorCodec } from './cursor.js'
import { createSql } from './db/client.js'
import { createPublisher } from './events.js'
import { createJobs } from './jobs.js'
import { createMailer } from './mail.js'
import { queues } from './queues.js'
import { createRateWindows } from './rate-windows.js'
import { closeRedis, createRedis, waitReady } from './redis.js'
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
 * (jobs) and Redis; with JOBS_WORKER this process also runs the queues' workers.
 */
export async function createDeps(config: Config, log: Log): Promise<Runtime> {
  const sql = createSql(config.DATABASE_URL, config.DATABASE_POOL_MAX)
  const searchSql = createSql(config.DATABASE_URL, config.DATABASE_SEARCH_POOL_MAX)
  const redis = createRedis(config, log)
  const mailer = createMailer(config, log)
  let jobs
  try {
    await waitReady(redis, 10_000)
    jobs = await createJobs(config, log, queues)
  } catch (err) {
    await Promise.allSettled([closeRedis(redis), sql.end({ timeout: 1 }), searchSql.end({ timeout: 1 })])
    mailer.close()
    throw err
  }
  const deps: Deps = {
    config,
    log,
    sql,
    searchSql,
    redis,
    events: createPublisher(redis, config.REDIS_PREFIX, log),
    jobs: jobs.jobs,
    mailer,
    memberTokens: createMemberVerifier(config),
    visitorTokens: createVisitorTokens(config),
    memberDirectory: new MemberDirectory(sql, config.MEMBER_CACHE_TTL_MS),
    channelSessions: new ChannelSessions(sql, config.MEMBER_CACHE_TTL_MS),
    rateWindows: createRateWindows(config, redis, log),
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
      await closeRedis(redis)
      await Promise.all([sql.end({ timeout: 5 }), searchSql.end({ timeout: 5 })])
    },
  }
}
