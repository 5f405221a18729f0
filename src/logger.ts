import type { FastifyServerOptions } from 'fastify'

/** Header values that must never reach the log (matched case-insensitively by lower-casing). */
const SECRET_HEADERS = [
  'authorization',
  'cookie',
  'x-visitor-session',
  'x-channel-token',
  'provider-a-signature',
  'provider-b-transmission-sig',
  'provider-b-cert-url',
]

/**
 * Headers are logged (ops want user-agent, origin, forwarded-for) but every credential-bearing
 * header is censored. Provider header names are configurable, so anything that looks like a
 * signature, a token or a secret is censored too.
 */
export function safeHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(headers)) {
    const key = k.toLowerCase()
    out[key] = SECRET_HEADERS.includes(key) || /sig|token|secret|auth|session|cookie|key/.test(key) ? '[Redacted]' : v
  }
  return out
}

export function loggerOptions(level: string): NonNullable<FastifyServerOptions['logger']> {
  return {
    level,
    redact: {
      paths: ['*.password', '*.secret', '*.token', '*.clientSecret', '*.access_token'],
      censor: '[Redacted]',
    },
    serializers: {
      req: (req) => ({
        method: req.method,
        url: req.url,
        remoteAddress: req.ip,
        headers: safeHeaders(req.headers as Record<string, unknown>),
      }),
    },
  }
}
