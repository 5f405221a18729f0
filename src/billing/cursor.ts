import { createHmac, timingSafeEqual } from 'node:crypto'
import { badRequest } from '../errors.js'

/**
 * Opaque, tamper-evident cursors: base64url(JSON payload) + "." + base64url(HMAC-SHA256 tag).
 * The payload names the list it belongs to, so a cursor from another list (or other sort
 * parameters) is refused like a forged one: 400 INVALID_CURSOR.
 */
export interface CursorCodec {
  encode(list: string, payload: Record<string, unknown>): string
  decode<T extends Record<string, unknown>>(list: string, cursor: string): T
}

/** CURSOR_SECRET, else a key derived from VISITOR_SESSION_SECRET (never the secret itself). */
export function cursorKey(config: { CURSOR_SECRET?: string; VISITOR_SESSION_SECRET: string }): Buffer {
  if (config.CURSOR_SECRET) return Buffer.from(config.CURSOR_SECRET)
  return createHmac('sha256', config.VISITOR_SESSION_SECRET).update('parley:cursor').digest()
}

export function createCursorCodec(key: Buffer): CursorCodec {
  const tag = (data: string) => createHmac('sha256', key).update(data).digest()
  const invalid = () => badRequest('Invalid cursor', 'INVALID_CURSOR')
  return {
    encode(list, payload) {
      const data = Buffer.from(JSON.stringify({ l: list, ...payload })).toString('base64url')
      return `${data}.${tag(data).toString('base64url')}`
    },
    decode<T>(list: string, cursor: string): T {
      const [data, sig, extra] = cursor.split('.')
      if (!data || !sig || extra !== undefined) throw invalid()
      const given = Buffer.from(sig, 'base64url')
      const expected = tag(data)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid()
      let parsed: unknown
      try {
        parsed = JSON.parse(Buffer.from(data, 'base64url').toString('utf8'))
      } catch {
        throw invalid()
      }
      if (!parsed || typeof parsed !== 'object' || (parsed as { l?: unknown }).l !== list) throw invalid()
      return parsed as T
    },
  }
}
