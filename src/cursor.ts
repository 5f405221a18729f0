import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Config } from './config.js'
import { invalidCursor } from './errors.js'

/**
 * Opaque keyset cursors: base64url(JSON { p: params, k: key }) + "." + HMAC tag. The params are
 * whatever the list's order depends on (sort, direction, filters); a cursor presented with other
 * params, or altered in any byte, is 400 INVALID_CURSOR. The key holds the last row's sort values
 * and id as the database sent them (timestamps as text, microseconds kept).
 */
export type CursorKey = (string | number | boolean | null)[]
export type CursorParams = Record<string, string | number | boolean | null | undefined>

export class CursorCodec {
  constructor(private secret: string) {}

  private tag(payload: string): Buffer {
    return createHmac('sha256', this.secret).update(payload).digest().subarray(0, 16)
  }

  encode(params: CursorParams, key: CursorKey): string {
    const payload = Buffer.from(JSON.stringify({ p: normalise(params), k: key })).toString('base64url')
    return `${payload}.${this.tag(payload).toString('base64url')}`
  }

  /** The key of a valid cursor for these params; throws 400 INVALID_CURSOR otherwise. */
  decode(cursor: string, params: CursorParams): CursorKey {
    const [payload, tag, ...rest] = cursor.split('.')
    if (!payload || !tag || rest.length > 0) throw invalidCursor()
    // Compare the canonical text, not decoded bytes: base64url's last character has spare bits,
    // so a decoded comparison would accept a cursor whose final character was changed.
    const given = Buffer.from(tag)
    const expected = Buffer.from(this.tag(payload).toString('base64url'))
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidCursor()
    let parsed: { p?: unknown; k?: unknown }
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      throw invalidCursor()
    }
    if (JSON.stringify(parsed.p) !== JSON.stringify(normalise(params)) || !Array.isArray(parsed.k)) throw invalidCursor()
    return parsed.k as CursorKey
  }
}

function normalise(params: CursorParams): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(params)
      .sort()
      .filter((k) => params[k] !== undefined)
      .map((k) => [k, params[k]]),
  )
}

/**
 * The process's codec (CURSOR_SECRET, else a key derived from VISITOR_SESSION_SECRET), built once
 * by createDeps: domain code uses `ctx.cursor`, never a codec of its own.
 */
export function createCursorCodec(config: Pick<Config, 'CURSOR_SECRET' | 'VISITOR_SESSION_SECRET'>): CursorCodec {
  return new CursorCodec(
    config.CURSOR_SECRET ?? createHmac('sha256', config.VISITOR_SESSION_SECRET).update('parley:cursor').digest('hex'),
  )
}
