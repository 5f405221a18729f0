import { randomBytes, randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { RedisClient } from '../src/redis.js'
import { SignJWT } from 'jose'
import { v7 as uuidv7 } from 'uuid'
import { buildApp, type App } from '../src/app.js'
import { loggerOptions } from '../src/logger.js'
import type { Role } from '../src/db/schema.js'
import { createTestDatabase } from './setup/database.js'

/** Minimal view of a tap Test: what the helpers need. */
export interface TestContext {
  teardown(fn: () => unknown): void
}

export const TEST_JWT_SECRET = 'test-member-secret-0123456789abcdef'
export const TEST_VISITOR_SECRET = 'test-visitor-secret-0123456789abcdef'
/** CHANNEL_SECRET_KEY of test apps: 32 fixed bytes in base64 (e-mail channels' passwords). */
export const TEST_CHANNEL_SECRET_KEY = Buffer.alloc(32, 7).toString('base64')

/** The environment every test app starts from; tests override single variables. */
export function testEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    VISITOR_SESSION_SECRET: TEST_VISITOR_SECRET,
    CHANNEL_SECRET_KEY: TEST_CHANNEL_SECRET_KEY,
    MIGRATE_ON_START: 'false',
    DATABASE_POOL_MAX: '5',
    // Feature tests create many conversations and messages per guest; the abuse limits are
    // tested by test/security/abuse-limits.test.ts with their own (small) values.
    VISITOR_CONVERSATIONS_PER_HOUR: '100000',
    VISITOR_CONVERSATIONS_PER_ADDRESS_PER_HOUR: '100000',
    VISITOR_OPEN_CONVERSATIONS_MAX: '100000',
    VISITOR_MESSAGES_PER_MIN: '100000',
    TRANSCRIPT_UNVERIFIED_PER_DAY: '100000',
    WEBHOOK_FAILURES_PER_MIN: '100000',
    RECONCILE_PER_MIN: '100000',
    VISITOR_CONNECTIONS_PER_MIN: '100000',
    CSAT_RATE_LIMIT_PER_MIN: '100000',
    VISITOR_CONNECTIONS_PER_ADDRESS_PER_MIN: '100000',
    // Attachments land in a temporary directory, never in the checkout (keys are unique per file).
    STORAGE_DIR: join(tmpdir(), 'parley-test-files'),
    ...overrides,
  }
}

export interface BuildResult {
  app: App
  databaseUrl: string
  redisPrefix: string
  /** Every log line the app wrote, parsed (only when `captureLogs` is set). */
  logs: Record<string, unknown>[]
  rawLog: () => string
}

/**
 * Builds the app on a fresh database cloned from the migrated template and a Redis prefix of its
 * own, so test files run in parallel without seeing each other. Closed and dropped at teardown.
 */
export async function build(
  t: TestContext,
  opts: {
    env?: Record<string, string | undefined>
    captureLogs?: boolean
    databaseUrl?: string
    /** Adds routes before the app is ready (tests of cross-cutting behaviour). */
    register?: (app: App) => void
  } = {},
): Promise<BuildResult> {
  let databaseUrl = opts.databaseUrl
  if (!databaseUrl) {
    const db = await createTestDatabase()
    databaseUrl = db.url
    t.teardown(db.drop)
  }
  const redisPrefix = opts.env?.REDIS_PREFIX ?? `t:${randomBytes(6).toString('hex')}:`
  const chunks: string[] = []
  const logs: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, cb) {
      const text = chunk.toString()
      chunks.push(text)
      for (const line of text.split('\n')) if (line.trim()) logs.push(JSON.parse(line))
      cb()
    },
  })
  const env = testEnv({ DATABASE_URL: databaseUrl, REDIS_PREFIX: redisPrefix, ...opts.env })
  const app = await buildApp({
    env,
    logger: opts.captureLogs ? { ...(loggerOptions(env.LOG_LEVEL === 'silent' ? 'info' : env.LOG_LEVEL!) as object), stream } : false,
  })
  // Registered after the database teardown, so it runs first (tap runs teardowns in reverse).
  t.teardown(() => app.close())
  opts.register?.(app)
  await app.ready()
  return { app, databaseUrl, redisPrefix, logs, rawLog: () => chunks.join('') }
}

/** The app's Redis client (tests run in Redis mode: testEnv sets REDIS_URL). */
export function redisOf(app: App): RedisClient {
  const shared = app.deps.shared
  if (shared.kind !== 'redis') throw new Error('this app runs in single-process mode: no Redis')
  return shared.redis
}

/** An HS256 member JWT as a development identity provider would issue it. */
export async function memberToken(
  sub: string,
  opts: { name?: string; email?: string; expiresIn?: string | number; secret?: string; claims?: Record<string, unknown> } = {},
): Promise<string> {
  return new SignJWT({ name: opts.name, email: opts.email, ...opts.claims })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime(opts.expiresIn ?? '1h')
    .sign(new TextEncoder().encode(opts.secret ?? TEST_JWT_SECRET))
}

export interface SeededMember {
  userId: string
  role: Role
  name: string
  email: string
  token: string
  /** Headers for app.inject as this member. */
  headers: Record<string, string>
}

export interface SeededWorkspace {
  workspaceId: string
  channelId: string
  channelToken: string
  identitySecret: string
  owner: SeededMember
  admin: SeededMember
  agent: SeededMember
  /** Adds another member of this workspace. */
  addMember(role: Role, name?: string): Promise<SeededMember>
}

/**
 * Writes a workspace with an owner, an admin, an agent and one web channel straight into the
 * database, for tests of features that build on identity and access.
 */
export async function seedWorkspace(app: App, name = 'Acme'): Promise<SeededWorkspace> {
  const workspaceId = randomUUID()
  const { sql } = app.deps
  await sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${name})`
  const channelId = randomUUID()
  const channelToken = `ct_${randomBytes(16).toString('hex')}`
  const identitySecret = `is_${randomBytes(24).toString('hex')}`
  await sql`
    INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
    VALUES (${channelId}, ${workspaceId}, 'Website', ${channelToken}, ${identitySecret})`
  const addMember = async (role: Role, memberName?: string): Promise<SeededMember> => {
    const userId = `idp|${randomBytes(8).toString('hex')}`
    const mName = memberName ?? `${role} ${userId.slice(-4)}`
    const email = `${userId.slice(4)}@example.test`
    await sql`INSERT INTO members (workspace_id, user_id, name, email, role) VALUES (${workspaceId}, ${userId}, ${mName}, ${email}, ${role})`
    const token = await memberToken(userId, { name: mName, email })
    return {
      userId,
      role,
      name: mName,
      email,
      token,
      headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspaceId },
    }
  }
  const owner = await addMember('owner', 'Olivia Owner')
  const admin = await addMember('admin', 'Adam Admin')
  const agent = await addMember('agent', 'Agnes Agent')
  return { workspaceId, channelId, channelToken, identitySecret, owner, admin, agent, addMember }
}

export interface SeededGuest {
  guestId: string
  channelId: string
  workspaceId: string
  name: string
  email: string
  session: string
  headers: Record<string, string>
}

/** A guest on the workspace's channel with a signed visitor session. */
export async function seedGuest(app: App, ws: SeededWorkspace, name = 'Gina Guest', email?: string): Promise<SeededGuest> {
  const guestId = uuidv7()
  const mail = email ?? `guest-${guestId.slice(-8)}@example.test`
  await app.deps.sql`
    INSERT INTO guests (id, workspace_id, channel_id, name, email) VALUES (${guestId}, ${ws.workspaceId}, ${ws.channelId}, ${name}, ${mail})`
  const { token } = app.deps.visitorTokens.sign({ guestId, channelId: ws.channelId, workspaceId: ws.workspaceId })
  return {
    guestId,
    channelId: ws.channelId,
    workspaceId: ws.workspaceId,
    name,
    email: mail,
    session: token,
    headers: { 'x-visitor-session': token },
  }
}
