import { Type, type Static } from '@sinclair/typebox'
import envSchema from 'env-schema'

/**
 * Every setting Parley reads from the environment. One schema serves the API (through
 * @fastify/env in plugins/config.ts), the gateway and the migrate command, so a variable is
 * validated the same way wherever it is read.
 */
export const ConfigSchema = Type.Object({
  /**
   * 'development' (the default: `npm start` on a fresh clone), 'production' (the image sets it:
   * refuses the embedded database, single-process mode and generated secrets) or 'test'.
   */
  NODE_ENV: Type.String({ default: 'development' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  /** Listen address of the API and the gateway; unset: `listenHost` (127.0.0.1 outside production). */
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Which proxies' X-Forwarded-For to believe for the client address (rate limits, logs):
   * 'false' (none: the socket's peer), 'true' (all: only behind a proxy that overwrites it), or a
   * comma-separated list of proxy addresses / CIDRs (the ingress). Fastify refuses hop counts.
   */
  TRUST_PROXY: Type.String({ pattern: '^(true|false|[0-9a-fA-F:.,/ ]*[.:][0-9a-fA-F:.,/ ]*)$', default: 'false' }),
  GATEWAY_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3001 }),
  /** A PostgreSQL URL, or `embedded:` (the default): a PostgreSQL of Parley's own under PARLEY_DIR (src/db/embedded.ts). */
  DATABASE_URL: Type.String({ pattern: '^(postgres(ql)?://|embedded:$)', default: 'embedded:' }),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 200, default: 10 }),
  /**
   * Connections of the separate pool conversation search runs on: searches queue among
   * themselves there and never take the main pool's connections from the inbox's reads.
   */
  DATABASE_SEARCH_POOL_MAX: Type.Integer({ minimum: 1, maximum: 50, default: 2 }),
  /**
   * Connections of the separate pool routing passes run on (docs/routing.md, "Latency"): a pass
   * never waits for a connection behind the requests that create the conversations it assigns.
   */
  DATABASE_ROUTING_POOL_MAX: Type.Integer({ minimum: 1, maximum: 20, default: 4 }),
  MIGRATE_ON_START: Type.Boolean({ default: true }),
  /**
   * `transaction` when DATABASE_URL is a pooler in transaction mode (PgBouncer): no named prepared
   * statements, the search pool's settings per transaction (docs/scaling.md).
   */
  DATABASE_POOLER: Type.Union([Type.Literal('none'), Type.Literal('transaction')], { default: 'none' }),
  /** A session connection for migrations (and pg-boss's schema) when DATABASE_URL is a pooler; default DATABASE_URL. */
  DATABASE_MIGRATION_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /** A streaming replica for searches, analytics, the CSV export and the visitors list (src/db/replica.ts). */
  DATABASE_READ_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /** Replay lag (seconds) past which those reads go back to the primary. */
  DATABASE_READ_MAX_LAG_S: Type.Number({ minimum: 0, maximum: 3600, default: 10 }),
  /** A Redis URL, a cluster's nodes (`redis-cluster://host:port,host:port`), or `memory:` (the default): single-process mode, gateway, limits and presence in this process (src/mode.ts). */
  REDIS_URL: Type.String({ pattern: '^(rediss?://|redis-cluster://|memory:$)', default: 'memory:' }),
  /** Development state: the embedded database (`pg/`) and generated development secrets (`secrets.json`). */
  PARLEY_DIR: Type.String({ minLength: 1, default: '.parley' }),
  /** The embedded database's port on 127.0.0.1 (0: a free port at each start). */
  EMBEDDED_PG_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 0 }),
  /** Prefix of every Redis key and channel Parley owns: lets several deployments (or test files) share one Redis. */
  REDIS_PREFIX: Type.String({ default: 'parley:' }),
  AUTH_JWKS_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  AUTH_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  AUTH_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  AUTH_JWT_SECRET: Type.Optional(Type.String({ minLength: 16 })),
  /** A JWKS fetch that takes longer is abandoned: the request that needed it gets 503 IDP_UNAVAILABLE. */
  AUTH_JWKS_TIMEOUT_MS: Type.Integer({ minimum: 1, maximum: 60000, default: 3000 }),
  /** How long a member lookup may be served from memory; a removed member loses access within this. */
  MEMBER_CACHE_TTL_MS: Type.Integer({ minimum: 0, default: 2000 }),
  VISITOR_SESSION_SECRET: Type.String({ minLength: 16 }),
  VISITOR_SESSION_TTL_S: Type.Integer({ minimum: 60, default: 2592000 }),
  /** Signs pagination cursors; defaults to a key derived from VISITOR_SESSION_SECRET. */
  CURSOR_SECRET: Type.Optional(Type.String({ minLength: 16 })),
  PROVIDER_A_WEBHOOK_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  PROVIDER_A_SIGNATURE_HEADER: Type.String({ default: 'provider-a-signature' }),
  PROVIDER_A_TOLERANCE_S: Type.Integer({ minimum: 1, default: 300 }),
  PROVIDER_B_API_BASE: Type.Optional(Type.String({ pattern: '^https?://' })),
  PROVIDER_B_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  PROVIDER_B_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  PROVIDER_B_WEBHOOK_ID: Type.Optional(Type.String({ minLength: 1 })),
  PROVIDER_B_HEADER_PREFIX: Type.String({ default: 'provider-b-' }),
  PROVIDER_B_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 10000 }),
  APP_URL: Type.String({ pattern: '^https?://', default: 'http://localhost:5173' }),
  CORS_ORIGINS: Type.Optional(Type.String()),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ default: 'Parley <no-reply@parley.local>' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  HEALTH_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 1000 }),
  AUTH_RATE_LIMIT_PER_MIN: Type.Integer({ minimum: 1, default: 20 }),
  PUBLIC_RATE_LIMIT_PER_MIN: Type.Integer({ minimum: 1, default: 120 }),
  /** How long a process reuses a channel's widget facts (channel row, anyone online) for GET /support/widget; 0: never. */
  WIDGET_CACHE_MS: Type.Integer({ minimum: 0, maximum: 30000, default: 1000 }),
  TRANSCRIPT_RATE_LIMIT_PER_HOUR: Type.Integer({ minimum: 1, default: 5 }),
  /*
   * The abuse-limit table (API.md section 2, docs/security.md): time windows declared on routes
   * (plugins/rate-limit.ts) and counts checked in transactions (open conversations, transcript
   * recipients).
   */
  /** GET /support/*: requests per client address and minute. */
  SUPPORT_RATE_LIMIT_PER_MIN: Type.Integer({ minimum: 1, default: 120 }),
  /** Conversations a visitor starts (POST /conversations, offline messages): per guest and hour. */
  VISITOR_CONVERSATIONS_PER_HOUR: Type.Integer({ minimum: 1, default: 10 }),
  /** The same, per client address and hour (one address, many guests). */
  VISITOR_CONVERSATIONS_PER_ADDRESS_PER_HOUR: Type.Integer({ minimum: 1, default: 30 }),
  /** OPEN conversations one guest may have at once; one more is 409 TOO_MANY_OPEN_CONVERSATIONS. */
  VISITOR_OPEN_CONVERSATIONS_MAX: Type.Integer({ minimum: 1, default: 5 }),
  /** Messages a visitor posts, per guest and minute. */
  VISITOR_MESSAGES_PER_MIN: Type.Integer({ minimum: 1, default: 30 }),
  /** Uploads a visitor makes, per guest and hour. */
  VISITOR_UPLOADS_PER_HOUR: Type.Integer({ minimum: 1, default: 20 }),
  /** Transcript mails unverified guests ask for one address (any workspace), per rolling day. */
  TRANSCRIPT_UNVERIFIED_PER_DAY: Type.Integer({ minimum: 1, default: 3 }),
  /** Failed webhook verifications (both providers) per client address and minute; then 429 until the window ends. */
  WEBHOOK_FAILURES_PER_MIN: Type.Integer({ minimum: 1, default: 60 }),
  /** POST /support/csat per guest and minute (a replacement rewrites metric events and rollups). */
  CSAT_RATE_LIMIT_PER_MIN: Type.Integer({ minimum: 1, default: 10 }),
  /** Visitor gateway handshakes per guest and minute; over it connect_error RATE_LIMITED. */
  VISITOR_CONNECTIONS_PER_MIN: Type.Integer({ minimum: 1, default: 30 }),
  /** The same, per client address (IPv6: its /64) and minute. */
  VISITOR_CONNECTIONS_PER_ADDRESS_PER_MIN: Type.Integer({ minimum: 1, default: 120 }),
  /** GET /conversations/counts/reconcile per workspace and minute. */
  RECONCILE_PER_MIN: Type.Integer({ minimum: 1, default: 6 }),
  /** Conversations a reconcile recounts per statement (keyset batches; docs/conversations.md). */
  RECONCILE_BATCH: Type.Integer({ minimum: 10, maximum: 10000, default: 1000 }),
  PRESENCE_TTL_S: Type.Integer({ minimum: 2, default: 30 }),
  /** How often each API replica sweeps the teams' queues, the backstop of routing's triggers (docs/routing.md); 0: never. */
  ROUTING_SWEEP_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 1000 }),
  /** How often a gateway refreshes its sockets' presence and sweeps expired ones (default: a fifth of PRESENCE_TTL_S, at most 10 s). */
  PRESENCE_HEARTBEAT_MS: Type.Optional(Type.Integer({ minimum: 100 })),
  /** Search: at most this many candidate chunks are examined per page, and at most this many guest-matching conversations are ranked. */
  SEARCH_CANDIDATE_LIMIT: Type.Integer({ minimum: 100, maximum: 100000, default: 2000 }),
  /** Run the pg-boss workers (transcript mail) inside this API process. */
  JOBS_WORKER: Type.Boolean({ default: true }),
  /** How often an idle worker polls its queue (pg-boss allows >= 0.5). */
  JOBS_POLL_INTERVAL_S: Type.Number({ minimum: 0.5, default: 2 }),
  /** How often each JOBS_WORKER process sweeps for snoozes that are due (a wake-up comes within it of `until`). */
  SNOOZE_SWEEP_INTERVAL_MS: Type.Integer({ minimum: 100, maximum: 8000, default: 2000 }),
  /** How often each JOBS_WORKER process sweeps for SLA targets past their due time (a breach is recorded within it; the contract allows 30 s). */
  SLA_SWEEP_INTERVAL_MS: Type.Integer({ minimum: 100, maximum: 20000, default: 5000 }),
  /** E-mail channels' mailbox readers (docs/email.md): how long a reader's lease lasts without renewal (renewed every third of it). */
  EMAIL_LEASE_MS: Type.Integer({ minimum: 1000, maximum: 45_000, default: 30_000 }),
  /** How often a reader looks for new mail besides IMAP IDLE, and each process looks for mailboxes without a reader. */
  EMAIL_POLL_MS: Type.Integer({ minimum: 100, maximum: 10_000, default: 8000 }),
  /** Transcript mail retries: first delay, exponential backoff up to the max, this many attempts. */
  TRANSCRIPT_RETRY_DELAY_S: Type.Integer({ minimum: 1, default: 30 }),
  TRANSCRIPT_RETRY_DELAY_MAX_S: Type.Integer({ minimum: 1, default: 3600 }),
  TRANSCRIPT_RETRY_LIMIT: Type.Integer({ minimum: 0, default: 16 }),
  /** An identical transcript request (same caller, conversation, address) within this window is the same request. */
  TRANSCRIPT_DEDUPE_WINDOW_S: Type.Integer({ minimum: 0, default: 60 }),
  /** Mentioned members also get an e-mail (durable mail queue), not only the mention:new event. */
  MENTION_EMAIL: Type.Boolean({ default: false }),
  SMTP_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10000 }),
  /** V8's old-generation growth between major collections, in % (src/heap.ts); 0: V8's own. */
  HEAP_GROWING_PERCENT: Type.Integer({ minimum: 0, maximum: 1000, default: 100 }),
  /** Idle time after which V8's freed pages go back to the OS (src/heap.ts); 0: never. */
  HEAP_RELEASE_IDLE_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 1000 }),
  /** The API's public base URL, for links that leave it (attachment links in e-mailed transcripts). */
  API_URL: Type.String({ pattern: '^https?://', default: 'http://localhost:3000' }),
  /** Attachments (docs/attachments.md): where files live. */
  STORAGE_DRIVER: Type.Union([Type.Literal('local'), Type.Literal('s3')], { default: 'local' }),
  /** The local driver's directory; default `<PARLEY_DIR>/uploads` (private like the rest of PARLEY_DIR). */
  STORAGE_DIR: Type.Optional(Type.String({ minLength: 1 })),
  S3_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  S3_REGION: Type.String({ minLength: 1, default: 'us-east-1' }),
  S3_BUCKET: Type.Optional(Type.String({ minLength: 3, maxLength: 63 })),
  S3_ACCESS_KEY_ID: Type.Optional(Type.String({ minLength: 1 })),
  S3_SECRET_ACCESS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  S3_FORCE_PATH_STYLE: Type.Boolean({ default: false }),
  /** With S3: GET /media/:id answers 302 to a presigned URL (valid MEDIA_REDIRECT_TTL_S, at most 5 minutes). */
  MEDIA_REDIRECT: Type.Boolean({ default: false }),
  MEDIA_REDIRECT_TTL_S: Type.Integer({ minimum: 1, maximum: 300, default: 300 }),
  /** Signs expiring media links (e-mailed transcripts); defaults to a key derived from VISITOR_SESSION_SECRET. */
  MEDIA_LINK_SECRET: Type.Optional(Type.String({ minLength: 16 })),
  /**
   * Encrypts e-mail channels' passwords (AES-256-GCM, src/email/secrets.ts): 32 bytes, base64.
   * Development generates one (src/dev-env.ts); unset elsewhere, e-mail channels answer 503
   * NOT_CONFIGURED and web chat is unaffected. Changing it makes the stored passwords unreadable
   * (set them again with PATCH /channels/:id).
   */
  CHANNEL_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** Largest file a member (UPLOAD_MAX_BYTES) or a visitor (UPLOAD_MAX_BYTES_VISITOR) may upload, in bytes. */
  UPLOAD_MAX_BYTES: Type.Integer({ minimum: 1, default: 25 * 1024 * 1024 }),
  UPLOAD_MAX_BYTES_VISITOR: Type.Integer({ minimum: 1, default: 10 * 1024 * 1024 }),
  /** Thumbnails made at once per process (the others wait); an image over THUMBNAIL_MAX_PIXELS gets none (API.md section 2). */
  THUMBNAIL_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
  THUMBNAIL_MAX_PIXELS: Type.Integer({ minimum: 1, default: 40_000_000 }),
  /** An upload no message names is deleted (row and bytes) this long after it was made. */
  UPLOAD_PENDING_TTL_S: Type.Integer({ minimum: 1, default: 86400 }),
  /** When the cleanup job runs (pg-boss cron, UTC; minute granularity). */
  UPLOAD_CLEANUP_CRON: Type.String({ minLength: 9, default: '*/15 * * * *' }),
})

export type Config = Static<typeof ConfigSchema>

export class ConfigError extends Error {}

/**
 * Every secret value that ever shipped in .env.example (`git log -p .env.example`): public, so a
 * copied .env would let anyone sign an owner's token. Refused in every environment.
 */
const EXAMPLE_SECRETS = new Set(['dev-only-member-secret-change-me', 'dev-only-visitor-secret-change-me'])
const SECRET_VARIABLES = [
  'AUTH_JWT_SECRET',
  'VISITOR_SESSION_SECRET',
  'CURSOR_SECRET',
  'MEDIA_LINK_SECRET',
  'PROVIDER_A_WEBHOOK_SECRET',
  'PROVIDER_B_CLIENT_SECRET',
  'CHANNEL_SECRET_KEY',
] as const

/** Rules one variable's schema cannot say. */
export function checkConfig(config: Config): Config {
  for (const name of SECRET_VARIABLES) {
    const value = config[name]
    if (value !== undefined && EXAMPLE_SECRETS.has(value.trim())) {
      // Names the variable, never the value.
      throw new ConfigError(
        `Invalid configuration: ${name} is a published example value (an old .env.example): set a secret of your own, or in development remove it and one is generated`,
      )
    }
  }
  // Production names its servers: the embedded forms are for one developer's machine.
  if (config.NODE_ENV === 'production' && (isEmbeddedDatabase(config) || isSingleProcess(config))) {
    throw new ConfigError(
      'Invalid configuration: NODE_ENV=production needs DATABASE_URL=postgres://... and REDIS_URL=redis://... (the embedded database and single-process mode are for development)',
    )
  }
  // Names the variable, never the value.
  if (config.CHANNEL_SECRET_KEY !== undefined && !isChannelSecretKey(config.CHANNEL_SECRET_KEY)) {
    throw new ConfigError('Invalid configuration: CHANNEL_SECRET_KEY must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)')
  }
  if (!config.AUTH_JWT_SECRET && !config.AUTH_JWKS_URL) {
    throw new ConfigError('Invalid configuration: AUTH_JWKS_URL or AUTH_JWT_SECRET is required')
  }
  if (config.AUTH_JWKS_URL && !config.AUTH_ISSUER) {
    throw new ConfigError('Invalid configuration: AUTH_ISSUER is required with AUTH_JWKS_URL')
  }
  // Without an audience check, a token the same provider issued for another application would pass.
  if (config.AUTH_JWKS_URL && !config.AUTH_AUDIENCE) {
    throw new ConfigError('Invalid configuration: AUTH_AUDIENCE is required with AUTH_JWKS_URL')
  }
  if (config.PRESENCE_HEARTBEAT_MS !== undefined && config.PRESENCE_HEARTBEAT_MS * 4 > config.PRESENCE_TTL_S * 1000) {
    throw new ConfigError('Invalid configuration: PRESENCE_HEARTBEAT_MS must be at most a quarter of PRESENCE_TTL_S')
  }
  if (config.STORAGE_DRIVER === 's3' && !config.S3_BUCKET) {
    throw new ConfigError('Invalid configuration: S3_BUCKET is required with STORAGE_DRIVER=s3')
  }
  if (config.MEDIA_REDIRECT && config.STORAGE_DRIVER !== 's3') {
    throw new ConfigError('Invalid configuration: MEDIA_REDIRECT=true needs STORAGE_DRIVER=s3')
  }
  return config
}

/** 32 bytes in base64 (or base64url), nothing else. */
function isChannelSecretKey(value: string): boolean {
  return /^[A-Za-z0-9+/_-]{43}=?$/.test(value.trim()) && Buffer.from(value.trim(), 'base64').length === 32
}

/** Turns env-schema's "env/PORT must be integer" into one line naming the variable. */
export function describeConfigError(err: unknown): string {
  if (err instanceof ConfigError) return err.message
  const msg = err instanceof Error ? err.message : String(err)
  return `Invalid configuration: ${msg.replace(/^env\//, '').replace(/^env /, '').replace(/, env\//g, ', ')}`
}

/** Validates an environment object outside Fastify (server entry, gateway, migrate command). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return checkConfig(envSchema<Config>({ schema: structuredClone(ConfigSchema), data: env, env: false, dotenv: false }))
  } catch (err) {
    throw new ConfigError(describeConfigError(err))
  }
}

/**
 * Where the API and the gateway listen: HOST, else 0.0.0.0 in production (a container's port is
 * published from outside it) and 127.0.0.1 otherwise (a development machine's server is not
 * offered to its network).
 */
export function listenHost(config: Pick<Config, 'HOST' | 'NODE_ENV'>): string {
  return config.HOST ?? (config.NODE_ENV === 'production' ? '0.0.0.0' : '127.0.0.1')
}

/** TRUST_PROXY as Fastify's trustProxy option. */
export function trustProxy(value: string | undefined): boolean | string {
  if (value === undefined || value === 'false') return false
  if (value === 'true') return true
  return value
}

/** Origins allowed on member-only routes: CORS_ORIGINS, else APP_URL's origin. */
export function memberOrigins(config: Config): string[] {
  if (config.CORS_ORIGINS) return config.CORS_ORIGINS.split(',').map((s) => s.trim()).filter(Boolean)
  return [new URL(config.APP_URL).origin]
}

/** DATABASE_URL=embedded: (or unset): Parley starts its own PostgreSQL (src/db/embedded.ts). */
export const isEmbeddedDatabase = (config: Pick<Config, 'DATABASE_URL'>) => config.DATABASE_URL === 'embedded:'

/** REDIS_URL=memory: (or unset): single-process mode, nothing shared with other processes (src/mode.ts). */
export const isSingleProcess = (config: Pick<Config, 'REDIS_URL'>) => config.REDIS_URL === 'memory:'
