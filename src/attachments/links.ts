import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Config } from '../config.js'

/** Signed media links (e-mailed transcripts): HMAC over (attachmentId, expiresAt). */
function key(config: Config): string {
  return config.MEDIA_LINK_SECRET ?? createHmac('sha256', config.VISITOR_SESSION_SECRET).update('parley media links').digest('hex')
}

const tag = (config: Config, id: string, expires: number) =>
  createHmac('sha256', key(config)).update(`${id.toLowerCase()}.${expires}`).digest().subarray(0, 20).toString('base64url')

/** A token for one file, valid `ttlS` seconds: `<expires unix s>.<tag>`. */
export function signMediaToken(config: Config, id: string, ttlS: number, now = Date.now()): string {
  const expires = Math.floor(now / 1000) + ttlS
  return `${expires}.${tag(config, id, expires)}`
}

/** The form of a token: `<expires>.<tag>`, at most 40 characters. */
const TOKEN_FORM = /^(\d{1,12})\.([A-Za-z0-9_-]{27})$/

/**
 * True when `token` has a signed link's form (whether or not it verifies): a request with no
 * other credentials and no such token presents nothing, 401 (src/auth/callers.ts).
 */
export const isMediaTokenForm = (token: string) => TOKEN_FORM.test(token)

/** True when `token` was signed for `id` and has not expired; compared in constant time. */
export function verifyMediaToken(config: Config, id: string, token: string, now = Date.now()): boolean {
  const m = TOKEN_FORM.exec(token)
  if (!m) return false
  const expires = Number(m[1])
  if (expires * 1000 < now) return false
  const want = Buffer.from(tag(config, id, expires))
  const got = Buffer.from(m[2]!)
  return want.length === got.length && timingSafeEqual(want, got)
}

/** Seven days: the life of a transcript's file links (API.md section 10). */
export const TRANSCRIPT_LINK_TTL_S = 7 * 24 * 3600
