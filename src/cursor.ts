import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Config } from './config.js'
import { invalidCursor } from './errors.js'
import { isUuid } from './uuid.js'

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

/** A page of any list (API.md: `{ data, nextCursor }`): the one definition. */
export interface Page<T> {
  data: T[]
  nextCursor: string | null
}

/** Timestamps as Postgres sends them in UTC (src/db/client.ts); -infinity sorts legacy rows without one. */
const TIMESTAMP = /^(-?infinity|\d{4,}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00)$/

/** What each position of a cursor's key may hold: a key of any other shape is INVALID_CURSOR. */
const KEY_PARTS = {
  text: (v: unknown) => typeof v === 'string',
  uuid: (v: unknown) => typeof v === 'string' && isUuid(v),
  timestamp: (v: unknown) => typeof v === 'string' && TIMESTAMP.test(v),
  int: (v: unknown) => Number.isInteger(v),
  bool: (v: unknown) => typeof v === 'boolean',
}
export type KeyPart = keyof typeof KEY_PARTS
/** One position of a key against its kind (search's position cursor checks its parts with it). */
export const keyPartIs = (part: KeyPart, v: unknown): boolean => KEY_PARTS[part](v)
type PartValue<P> = P extends 'int' ? number : P extends 'bool' ? boolean : string
/** The decoded key of a shape: `['timestamp', 'uuid']` gives `[string, string]`. */
export type KeyOf<S extends readonly KeyPart[]> = { -readonly [I in keyof S]: PartValue<S[I]> }

export interface KeysetList<Row, S extends readonly KeyPart[]> {
  /** The request's cursor (absent or empty: the first page). */
  cursor: string | undefined
  /** What the cursor is bound to (list name, sort, filters, scope): presented with others, INVALID_CURSOR. */
  params: CursorParams
  /** The key's shape: the sort values then the id, as `keyOf` writes them. */
  key: S
  limit: number
  /** Up to `take` rows in the list's order, strictly after `after` (null: from the start). */
  fetch: (after: KeyOf<S> | null, take: number) => Promise<Row[]>
  /** The key of a row, the next page's `after`. */
  keyOf: (row: Row) => KeyOf<S>
}

/**
 * Every keyset list's page: the cursor decoded and checked against the list's params and key
 * shape (400 INVALID_CURSOR alike on every list: altered, of another list, other params, other
 * shape), `limit + 1` rows fetched so the extra one says whether another page exists, the next
 * cursor encoded from the page's last row.
 */
export async function keysetPage<Row, const S extends readonly KeyPart[]>(
  ctx: { cursor: CursorCodec },
  list: KeysetList<Row, S>,
): Promise<Page<Row>> {
  const after = list.cursor ? readKey(ctx.cursor, list.cursor, list.params, list.key) : null
  const rows = await list.fetch(after, list.limit + 1)
  const data = rows.slice(0, list.limit)
  const last = data[data.length - 1]
  return { data, nextCursor: rows.length > list.limit && last ? ctx.cursor.encode(list.params, list.keyOf(last)) : null }
}

function readKey<S extends readonly KeyPart[]>(codec: CursorCodec, cursor: string, params: CursorParams, shape: S): KeyOf<S> {
  const key = codec.decode(cursor, params)
  if (key.length !== shape.length || !shape.every((part, i) => keyPartIs(part, key[i]))) throw invalidCursor()
  return key as KeyOf<S>
}
