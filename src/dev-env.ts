import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** What developmentEnv filled in from PARLEY_DIR, for the entry point's one log line. */
export interface DevSecrets {
  file: string
  names: string[]
  created: boolean
}

/**
 * The environment of a command run from a checkout (`npm start`, `npm run token`, `npm run
 * migrate`, `npm run gateway`), before the configuration is validated:
 *
 * 1. A local `.env` fills in what the environment does not set (real variables win; tests pass
 *    theirs explicitly, so NODE_ENV=test reads none).
 * 2. In development (NODE_ENV unset or `development`), the secrets still missing
 *    (VISITOR_SESSION_SECRET, CHANNEL_SECRET_KEY, and AUTH_JWT_SECRET unless AUTH_JWKS_URL names an identity provider)
 *    are generated once and kept in `<PARLEY_DIR>/secrets.json` (mode 0600, never in the
 *    repository: .parley/ is ignored), so tokens stay valid across restarts and `npm run token`
 *    signs with the same secret. Production never gets here: its missing secret stops the start.
 */
export function developmentEnv(env: NodeJS.ProcessEnv = process.env): DevSecrets | null {
  if (env.NODE_ENV !== 'test' && existsSync('.env')) process.loadEnvFile('.env')
  if ((env.NODE_ENV ?? 'development') !== 'development') return null
  const missing = ['VISITOR_SESSION_SECRET', 'CHANNEL_SECRET_KEY', ...(env.AUTH_JWKS_URL ? [] : ['AUTH_JWT_SECRET'])].filter((name) => !env[name])
  if (missing.length === 0) return null
  const dir = env.PARLEY_DIR || '.parley'
  const file = join(dir, 'secrets.json')
  const kept = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {}
  const created = missing.filter((name) => typeof kept[name] !== 'string')
  // 32 random bytes each; CHANNEL_SECRET_KEY is a key, in the base64 its variable documents.
  for (const name of created) kept[name] = randomBytes(32).toString(name === 'CHANNEL_SECRET_KEY' ? 'base64' : 'base64url')
  if (created.length > 0) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileSync(file, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o600 })
  }
  for (const name of missing) env[name] = kept[name]
  return { file, names: missing, created: created.length > 0 }
}

/** The one log line about them. */
export function describeDevSecrets(s: DevSecrets): string {
  return `development secrets (${s.names.join(', ')}) ${s.created ? 'generated in' : 'read from'} ${s.file}; production sets them in the environment`
}
