import type { FastifyServerOptions } from 'fastify'
import type { LogFn } from 'pino'

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
    if (SECRET_HEADERS.includes(key) || /sig|token|secret|auth|session|cookie|key/.test(key)) out[key] = '[Redacted]'
    // The page a widget runs on may carry the same kind of parameters in its own URL.
    else if (key === 'referer' && typeof v === 'string') out[key] = redactQuery(v)
    else out[key] = v
  }
  return out
}

/** Query parameters whose values are people's data or credentials (API.md section 8). */
const PEOPLE_PARAMS = /^(q|.*email.*)$/i
const CREDENTIAL_PARAMS = /token|session|secret|signature|password|key/i

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '))
  } catch {
    return raw // malformed escapes: judge the name as written
  }
}

/**
 * A URL as logged: the query string keeps every parameter name, and the values of `q`, e-mail
 * parameters and any parameter whose name contains token, session, secret, signature, password
 * or key (any case, names percent-decoded before they are judged) become `[Redacted]`. A search
 * for a guest's address or a provider's return parameters never reach the log.
 */
export function redactQuery(url: string): string {
  const start = url.indexOf('?')
  if (start < 0) return url
  const pairs = url.slice(start + 1).split('&')
  for (let i = 0; i < pairs.length; i++) {
    const eq = pairs[i].indexOf('=')
    if (eq < 0) continue
    const name = decodeName(pairs[i].slice(0, eq))
    if (PEOPLE_PARAMS.test(name) || CREDENTIAL_PARAMS.test(name)) pairs[i] = `${pairs[i].slice(0, eq)}=[Redacted]`
  }
  return `${url.slice(0, start)}?${pairs.join('&')}`
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
        url: redactQuery(req.url),
        remoteAddress: req.ip,
        headers: safeHeaders(req.headers as Record<string, unknown>),
      }),
    },
  }
}
