import { Readable } from 'node:stream'
import sharp from 'sharp'
import type { MediaQueryInput } from '../../schemas/attachments.js'
import type { Ctx } from '../context.js'
import { attachmentNotFound, noThumbnail, rangeNotSatisfiable, storageUnavailable, unauthorized } from '../errors.js'
import { isUuid } from '../uuid.js'
import { IMAGE_TYPES, isInline } from './detect.js'
import { verifyMediaToken } from './links.js'
import { contentDisposition } from './names.js'
import { tooLargeForThumbnail } from './thumbnails.js'
import { thumbKey } from './uploads.js'
import type { thumbRefusals } from '../db/schema.js'
import { ATTACHMENT_SELECT, type AttachmentRecord } from './view.js'

type ThumbRefusal = (typeof thumbRefusals)[number]

/** Longest side of a thumbnail, in pixels. */
export const THUMB_SIZE = 320

/** What GET /media/:id answers: the route only copies it onto the reply. */
export type MediaAnswer =
  | { kind: 'redirect'; location: string; headers: Record<string, string> }
  | { kind: 'not-modified'; headers: Record<string, string> }
  | { kind: 'body'; status: 200 | 206; headers: Record<string, string>; stream: Readable }

export interface MediaRequest {
  query: MediaQueryInput
  range?: string
  ifNoneMatch?: string
  ifRange?: string
}

/**
 * The attachment `id` if the caller may read it, else 404 (ids cannot be probed): with a valid
 * signed token, anyone; a member of its workspace; the visitor of its conversation, for attached
 * files that are not a private note's and for its own pending uploads. A deleted conversation's
 * files are 404 at once, token or not.
 */
async function readable(ctx: Ctx, id: string, token: string | undefined): Promise<AttachmentRecord> {
  // No credentials and no token: who is asking is unknown (401, before anything about the id).
  if (token === undefined && ctx.caller.kind === 'anonymous') throw unauthorized()
  if (!isUuid(id)) throw attachmentNotFound()
  const [row] = await ctx.sql<AttachmentRecord[]>`
    SELECT ${ctx.sql.unsafe(ATTACHMENT_SELECT)}, c.guest_id AS "guestId"
    FROM attachments a JOIN conversations c ON c.id = a.conversation_id
    WHERE a.id = ${id} AND c.deleted_at IS NULL AND a.purge_at IS NULL`
  if (!row) throw attachmentNotFound()
  if (token !== undefined) {
    if (verifyMediaToken(ctx.config, row.id, token)) return row
    throw attachmentNotFound()
  }
  const c = ctx.caller
  if (c.kind === 'member' && c.workspaceId === row.workspaceId) return row
  if (c.kind === 'visitor' && c.workspaceId === row.workspaceId && (row as AttachmentRecord & { guestId: string }).guestId === c.guestId) {
    if (row.messageId === null ? row.uploaderType === 'GUEST' && row.uploaderId === c.guestId : !row.private) return row
  }
  throw attachmentNotFound()
}

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` against `size`; null to send the whole file (absent or multi-range). */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null {
  if (!header) return null
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null // several ranges or another unit: the whole file (RFC 9110 allows it)
  let start: number
  let end: number
  if (m[1] === '') {
    const n = Number(m[2])
    if (n === 0) throw rangeNotSatisfiable(size)
    start = Math.max(0, size - n)
    end = size - 1
  } else {
    start = Number(m[1])
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
    if (m[2] !== '' && Number(m[2]) < start) return null // invalid: ignored
  }
  if (start >= size || size === 0) throw rangeNotSatisfiable(size)
  return { start, end }
}

const etagMatches = (header: string | undefined, etag: string) =>
  !!header && header.split(',').some((t) => { const v = t.trim().replace(/^W\//, ''); return v === '*' || v === etag })

/** GET /media/:id: the bytes with the contract's headers, a 304, a 206, or a redirect to the store. */
export async function openMedia(ctx: Ctx, id: string, req: MediaRequest): Promise<MediaAnswer> {
  const row = await readable(ctx, id, req.query.token)
  const thumb = req.query.variant === 'thumb'
  if (thumb && !IMAGE_TYPES.has(row.contentType)) throw noThumbnail('Only images have a thumbnail')
  const forceDownload = req.query.download !== undefined
  const contentType = thumb ? 'image/webp' : row.contentType
  const disposition = contentDisposition(!forceDownload && isInline(contentType) ? 'inline' : 'attachment', thumb ? thumbName(row.filename) : row.filename)
  const etag = thumb ? `"${row.sha256}-thumb"` : `"${row.sha256}"`
  const headers: Record<string, string> = {
    etag,
    'x-content-type-options': 'nosniff',
    'content-security-policy': 'sandbox',
    'cache-control': req.query.token ? 'private, max-age=300' : 'private, no-cache',
    'accept-ranges': 'bytes',
    'content-disposition': disposition,
  }
  if (etagMatches(req.ifNoneMatch, etag)) return { kind: 'not-modified', headers }

  const key = thumb ? await ensureThumbnail(ctx, row) : row.storageKey
  if (ctx.config.MEDIA_REDIRECT && ctx.storage.driver === 's3') {
    const location = await guard(() =>
      ctx.storage.presignGet(key, { contentType, disposition, expiresInS: ctx.config.MEDIA_REDIRECT_TTL_S }),
    )
    if (location) return { kind: 'redirect', location, headers: { 'cache-control': 'private, no-store' } }
  }

  const size = thumb ? null : Number(row.size)
  const range = size !== null && (!req.ifRange || req.ifRange.trim() === etag) ? parseRange(req.range, size) : null
  const stream = await guard(() => ctx.storage.get(key, range ?? undefined, size ?? undefined))
  if (!stream) {
    ctx.log.error({ attachmentId: row.id, key }, 'attachment bytes missing from storage')
    throw attachmentNotFound()
  }
  headers['content-type'] = contentType.startsWith('text/') ? `${contentType}; charset=utf-8` : contentType
  if (range && size !== null) {
    headers['content-range'] = `bytes ${range.start}-${range.end}/${size}`
    headers['content-length'] = String(range.end - range.start + 1)
    return { kind: 'body', status: 206, headers, stream }
  }
  if (size !== null) headers['content-length'] = String(size)
  return { kind: 'body', status: 200, headers, stream }
}

const thumbName = (filename: string) => `${filename.replace(/\.[^.]*$/, '') || 'image'}-thumb.webp`

async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch {
    throw storageUnavailable()
  }
}

/**
 * The thumbnail's key: stored once made; else made now, in one of the process's
 * THUMBNAIL_CONCURRENCY slots, shared with every request for the same file meanwhile
 * (ctx.thumbnails). No thumbnail, for good (`thumb_refusal`, 400 NO_THUMBNAIL without reading the
 * file again): an image over THUMBNAIL_MAX_PIXELS (known at upload; sharp's limitInputPixels
 * refuses one whose header said otherwise before decoding it), or one sharp cannot read. A store
 * that fails is 503 and is not remembered.
 */
async function ensureThumbnail(ctx: Ctx, row: AttachmentRecord): Promise<string> {
  if (row.thumbKey) return row.thumbKey
  if (row.thumbRefusal) throw noThumbnail(refusalMessage[row.thumbRefusal])
  if (tooLargeForThumbnail(ctx.config, row.width, row.height)) {
    // Uploaded before the size was checked at upload: remember it now.
    await refuseThumbnail(ctx, row.id, 'too_large')
    throw noThumbnail(refusalMessage.too_large)
  }
  return ctx.thumbnails.run(row.id, () => makeThumbnail(ctx, row))
}

const refusalMessage: Record<ThumbRefusal, string> = {
  too_large: 'This image is too large to make a thumbnail',
  unreadable: 'This image cannot be read to make a thumbnail',
}

async function refuseThumbnail(ctx: Ctx, id: string, reason: ThumbRefusal) {
  await ctx.sql`UPDATE attachments SET thumb_refusal = ${reason} WHERE id = ${id}`
}

/** Makes and stores the thumbnail (at most THUMB_SIZE px on the longer side, WebP, EXIF orientation applied). */
async function makeThumbnail(ctx: Ctx, row: AttachmentRecord): Promise<string> {
  const key = thumbKey(row.workspaceId, row.id)
  const source = await guard(() => ctx.storage.get(row.storageKey))
  if (!source) throw attachmentNotFound()
  // An error of the store while reading is the store's, not the image's: 503, not remembered.
  let storeFailed = false
  source.on('error', () => (storeFailed = true))
  let bytes: Buffer
  try {
    const pipeline = sharp({ failOn: 'error', limitInputPixels: ctx.config.THUMBNAIL_MAX_PIXELS })
      .rotate()
      .resize(THUMB_SIZE, THUMB_SIZE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 80 })
    source.pipe(pipeline)
    bytes = await pipeline.toBuffer()
  } catch (err) {
    source.destroy()
    if (storeFailed) throw storageUnavailable()
    const reason: ThumbRefusal = /pixel limit/i.test((err as Error).message) ? 'too_large' : 'unreadable'
    ctx.log.info({ attachmentId: row.id, reason, err: { message: (err as Error).message } }, 'no thumbnail for this image, for good')
    await refuseThumbnail(ctx, row.id, reason)
    throw noThumbnail(refusalMessage[reason])
  }
  await guard(() => ctx.storage.put(key, Readable.from([bytes]), 'image/webp'))
  await ctx.sql`UPDATE attachments SET thumb_key = ${key} WHERE id = ${row.id}`
  return key
}
