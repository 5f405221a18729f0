import { parseArgs } from 'node:util'
import { createSigner } from 'fast-jwt'
import { loadConfig } from './config.js'
import { developmentEnv } from './dev-env.js'

/**
 * `npm run token -- --sub alice [--name "Alice"] [--email a@example.test] [--expires 12h]`:
 * prints a member token (HS256, signed with the development AUTH_JWT_SECRET, the same one
 * `npm start` uses: .env or PARLEY_DIR/secrets.json) so the member API can be called with curl.
 * Refused in production, and when members sign in through an identity provider (AUTH_JWKS_URL).
 */
const usage = 'usage: npm run token -- --sub <user id> [--name <name>] [--email <address>] [--expires <1h, 12h, 7d>]'

function fail(message: string): never {
  console.error(message)
  process.exit(1)
}

let args
try {
  args = parseArgs({
    options: { sub: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' }, expires: { type: 'string', default: '12h' } },
    strict: true,
  }).values
} catch (err) {
  fail(`${(err as Error).message}\n${usage}`)
}
if (!args.sub || args.sub.length > 255) fail(`--sub is required (1..255 characters)\n${usage}`)
const expires = /^(\d+)([smhd])$/.exec(args.expires ?? '')
if (!expires) fail(`--expires takes a number and a unit: 30m, 12h, 7d\n${usage}`)
const expiresInMs = Number(expires[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[expires[2] as 's' | 'm' | 'h' | 'd']

developmentEnv()
let config
try {
  config = loadConfig()
} catch (err) {
  fail((err as Error).message)
}
if (config.NODE_ENV === 'production') fail('npm run token is a development command: production tokens come from the identity provider')
if (!config.AUTH_JWT_SECRET) fail('AUTH_JWKS_URL is set: member tokens come from that identity provider, not from npm run token')

const sign = createSigner({ key: config.AUTH_JWT_SECRET, algorithm: 'HS256', expiresIn: expiresInMs })
console.log(sign({ sub: args.sub, ...(args.name ? { name: args.name } : {}), ...(args.email ? { email: args.email } : {}) }))
