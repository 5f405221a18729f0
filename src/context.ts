import type { Redis } from 'ioredis'
import type { LogFn } from 'pino'
import type { MemberDirectory } from './auth/members.js'
import type { MemberVerifier, VisitorTokens } from './auth/tokens.js'
import type { Config } from './config.js'
import type { Db, Pool } from './db/client.js'
import type { EventPublisher } from './events.js'
import type { Jobs } from './jobs.js'
import type { Mailer } from './mail.js'

/** A pino logger (the process's, a request's or a job's). */
export interface Log {
  trace: LogFn
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
  fatal: LogFn
  child(bindings: Record<string, unknown>): Log
}

/**
 * The process's infrastructure, built once by createDeps (src/deps.ts): what domain code may use
 * besides its input. Nothing else reaches domain code (no Fastify instance, no request).
 */
export interface Deps {
  config: Config
  log: Log
  sql: Pool
  db: Db
  redis: Redis
  events: EventPublisher
  jobs: Jobs
  mailer: Mailer
  memberTokens: MemberVerifier
  visitorTokens: VisitorTokens
  members: MemberDirectory
}
