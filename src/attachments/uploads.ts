import { finished, type Readable } from 'node:stream'
import sharp from 'sharp'
import { v7 as uuidv7 } from 'uuid'
import type { AttachmentView } from '../../schemas/attachments.js'
import { senderOf, type Ctx } from '../context.js'
import { findConversationForCaller } from '../conversations/access.js'
import { AppError, malformedUpload, storageUnavailable, uploadTooLarge } from '../errors.js'
import { IMAGE_TYPES, UploadInspector } from './detect.js'
import { nameForType, sanitiseFilename } from './names.js'
import { tooLargeForThumbnail } from './thumbnails.js'
import { ATTACHMENT_SELECT, toAttachmentView, type AttachmentRecord } from './view.js'

export interface UploadInput {
  conversationId: string
  /** The file part as the client sent it: its name and declared type are hints, never trusted. */
  filename: string | undefined
  declaredType: string
  stream: Readable
}

/** Where a file's bytes live: one object per attachment, its thumbnail beside it. */
export const storageKey = (workspaceId: string, id: string) => `${workspaceId}/${id}`
export const thumbKey = (workspaceId: string, id: string) => `${workspaceId}/${id}.thumb`

/** The largest file this caller may upload: members and visitors have their own limits. */
export function uploadLimit(ctx: Ctx): number {
  return senderOf(ctx).type === 'GUEST' ? ctx.config.UPLOAD_MAX_BYTES_VISITOR : ctx.config.UPLOAD_MAX_BYTES
}

/**
 * The conversation an upload goes to, checked before any byte of the file is read: the caller
 * must see it (member of its workspace, or its visitor), else 404.
 */
export async function uploadTarget(ctx: Ctx, conversationId: string) {
  return findConversationForCaller(ctx, conversationId)
}

/** A file stored through the inspector: what its attachment row records. */
export interface StoredFile {
  filename: string
  contentType: string
  size: number
  sha256: string
  width: number | null
  height: number | null
  thumbRefusal: 'too_large' | null
}

/**
 * Streams `input.stream` to storage under `key` through the inspector (size limit `max`, sha256,
 * type from the bytes, markup refused in text): the one way a file becomes an object, for an
 * upload and for a mail's attachment (src/email/inbound.ts). Any failure removes the object and
 * throws: the inspector's AppError (413, 415), 400 MALFORMED_UPLOAD when the source ended early,
 * 503 STORAGE_UNAVAILABLE when the store failed.
 */
export async function storeFile(ctx: Ctx, key: string, input: Omit<UploadInput, 'conversationId'>, max: number): Promise<StoredFile> {
  const filename = sanitiseFilename(input.filename)
  const inspector = new UploadInspector(max, filename, input.declaredType)

  let sourceError: unknown = null
  const fail = (err: unknown) => {
    sourceError ??= err
    inspector.destroy(err instanceof Error ? err : new Error(String(err)))
  }
  // The multipart stream ends early (truncated) or errors when the client goes away, possibly
  // before it is read here: the parser fails the file part as soon as the body ends short, which
  // for a small request is while the conversation is still being looked up. finished() reports a
  // stream that failed already; an 'error' listener added now waited for it forever (the fuzz
  // sweep's hang: a form cut one byte into the file).
  finished(input.stream, (err) => {
    if (err) fail(err)
  })
  inspector.on('error', (err) => (sourceError ??= err))
  input.stream.pipe(inspector)
  try {
    await ctx.storage.put(key, inspector, 'application/octet-stream')
  } catch (err) {
    // Discard the rest of the file part (the parser's limit bounds it) so the answer can be read.
    input.stream.unpipe(inspector)
    input.stream.resume()
    await ctx.storage.delete(key).catch(() => {})
    if (sourceError instanceof AppError) throw sourceError
    // The client's stream failed (gone, or the form cut short): its fault, nothing was kept.
    if (sourceError) throw malformedUpload('The upload ended before the file was complete')
    ctx.log.warn({ err: { message: (err as Error).message, code: (err as { code?: string }).code } }, 'upload not stored: storage unavailable')
    throw storageUnavailable()
  }
  const truncated = (input.stream as { truncated?: boolean }).truncated === true
  if (truncated) {
    // The multipart parser's own size limit (a backstop above ours) cut the file.
    await ctx.storage.delete(key).catch(() => {})
    throw uploadTooLarge(max)
  }
  const type = inspector.type!
  const dims = IMAGE_TYPES.has(type) ? await dimensions(inspector.headBuffer()) : null
  return {
    // The stored (and served) name agrees with the detected type: a text file is never saved as `.html`.
    filename: nameForType(filename, type),
    contentType: type,
    size: inspector.size,
    sha256: inspector.sha256(),
    width: dims?.width ?? null,
    height: dims?.height ?? null,
    // Known now from the header: an image past THUMBNAIL_MAX_PIXELS never gets a thumbnail (never decoded).
    thumbRefusal: dims && tooLargeForThumbnail(ctx.config, dims.width, dims.height) ? 'too_large' : null,
  }
}

/**
 * POST /uploads: streams the file to storage (storeFile), then records the pending upload. The
 * row is inserted only once the object is complete; any failure on the way (client gone, too
 * large, refused type, storage down) removes the object, so it leaves no row and no object. A
 * crash between the two leaves an object without a row under a key nobody knows: the cost of a
 * few bytes, never a dangling row.
 */
export async function createUpload(ctx: Ctx, input: UploadInput): Promise<AttachmentView> {
  const conv = await uploadTarget(ctx, input.conversationId)
  const sender = senderOf(ctx)
  const id = uuidv7()
  const key = storageKey(conv.workspaceId, id)
  const f = await storeFile(ctx, key, input, uploadLimit(ctx))
  try {
    const [row] = await ctx.sql<AttachmentRecord[]>`
      INSERT INTO attachments AS a (id, workspace_id, conversation_id, uploader_type, uploader_id, filename, content_type, size, sha256, width, height, storage_key, thumb_refusal)
      VALUES (${id}, ${conv.workspaceId}, ${conv.id}, ${sender.type},
              ${sender.id}, ${f.filename}, ${f.contentType}, ${f.size},
              ${f.sha256}, ${f.width}, ${f.height}, ${key}, ${f.thumbRefusal})
      RETURNING ${ctx.sql.unsafe(ATTACHMENT_SELECT)}`
    return toAttachmentView(row!)
  } catch (err) {
    await ctx.storage.delete(key).catch(() => {})
    throw err
  }
}

/** An image's size from its first bytes (the header); null when they do not tell. */
async function dimensions(head: Buffer): Promise<{ width: number; height: number } | null> {
  try {
    const m = await sharp(head, { failOn: 'none' }).metadata()
    if (!m.width || !m.height) return null
    // EXIF orientations 5..8 are rotated a quarter turn: the displayed size is swapped.
    return m.orientation && m.orientation >= 5 ? { width: m.height, height: m.width } : { width: m.width, height: m.height }
  } catch {
    return null
  }
}
