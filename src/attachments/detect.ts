import { createHash } from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'
import { fileTypeFromBuffer } from 'file-type'
import { unsupportedMediaType, uploadTooLarge } from '../errors.js'

/** Types Parley accepts (API.md section 10), as file-type names them, with the type served. */
const ALLOWED: Record<string, string> = {
  'image/png': 'image/png',
  'image/jpeg': 'image/jpeg',
  'image/gif': 'image/gif',
  'image/webp': 'image/webp',
  'application/pdf': 'application/pdf',
  'audio/mpeg': 'audio/mpeg',
  'audio/ogg': 'audio/ogg',
  'audio/ogg; codecs=opus': 'audio/ogg',
  'audio/wav': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'audio/x-wav': 'audio/wav',
  'video/mp4': 'video/mp4',
  'video/webm': 'video/webm',
  'application/zip': 'application/zip',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
}

export const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])

/** Served inline (everything else is `attachment`): images, PDF, audio and video; never SVG or HTML. */
export const isInline = (type: string) => IMAGE_TYPES.has(type) || type === 'application/pdf' || type.startsWith('audio/') || type.startsWith('video/')

/** Bytes read before the type is decided (file-type's own sample size). */
export const SAMPLE_BYTES = 4100
/** Bytes kept of an image's head, for its dimensions (headers sit within the first few KiB). */
export const HEAD_BYTES = 64 * 1024

/**
 * Text has no magic number: a sample that is valid UTF-8 without control characters (tabs and
 * line breaks allowed) is plain text, or CSV when the name or the declared type says so.
 */
function textType(sample: Buffer, filename: string, declared: string): string | null {
  // A multi-byte character may be cut at the sample's end: drop up to 3 trailing bytes of it.
  let end = sample.length
  for (let i = 0; i < 3 && end > 0 && (sample[end - 1]! & 0xc0) === 0x80; i++) end--
  if (end > 0 && sample[end - 1]! >= 0xc0) end--
  const text = sample.subarray(0, end)
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(text)
  } catch {
    return null
  }
  for (const b of text) if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c) || b === 0x7f) return null
  // Markup (HTML, SVG, XML) is text too, and not on the list: a browser would run it. Anywhere in
  // the sample; the inspector looks at the rest of the file too.
  if (MARKUP.test(text.toString('latin1'))) return null
  return /\.csv$/i.test(filename) || /^text\/csv\b/i.test(declared) ? 'text/csv' : 'text/plain'
}

/**
 * Markup a browser would act on, anywhere in a text file: a document start (`<!doctype`, `<?xml`,
 * `<!--`, `<![CDATA[`), or an opening or closing tag of an HTML or SVG element that makes a
 * document, runs code, loads something or takes input. Other `<word>`s (`<none>`, `x<a`, `<b>`)
 * are plain text: served as text/plain under a text name (names.ts), they do nothing.
 * Markup is ASCII: the bytes are read as latin1, so a chunk cut mid-character matches the same.
 */
const MARKUP_ELEMENTS =
  'html|head|body|script|style|iframe|frame|frameset|object|embed|applet|form|input|button|textarea|select|svg|math|meta|link|base|img|video|audio|source|template|xsl:[a-z-]+|xml|xmp|noscript|details|marquee|isindex|portal'
const MARKUP = new RegExp(`<(?:!doctype|\\?xml|!--|!\\[cdata\\[|/?(?:${MARKUP_ELEMENTS})(?=[\\s/>]))`, 'i')
/** Longest text a MARKUP match can need across two chunks. */
const MARKUP_OVERLAP = 32

/** The served type of a sample, or a 415: detected from the bytes; a declared image type must agree. */
export async function detectType(sample: Buffer, filename: string, declared: string): Promise<string> {
  const found = await fileTypeFromBuffer(sample)
  const type = found ? ALLOWED[found.mime] : sample.length > 0 ? (textType(sample, filename, declared) ?? undefined) : undefined
  if (!type) throw unsupportedMediaType()
  const claimed = declared.toLowerCase().split(';')[0]!.trim().replace('image/jpg', 'image/jpeg')
  if (claimed.startsWith('image/') && claimed !== type) throw unsupportedMediaType('The file is not the image type it claims to be')
  return type
}

/**
 * The upload's bytes on their way to storage: counts them (past `max`, a 413), hashes them, and
 * holds the first SAMPLE_BYTES until the type is decided, so nothing of a refused file reaches the
 * store. Keeps the head of the file for image dimensions. Memory: the sample and head only.
 */
export class UploadInspector extends Transform {
  size = 0
  type: string | null = null
  readonly head: Buffer[] = []
  private headBytes = 0
  private readonly hash = createHash('sha256')
  private pending: Buffer[] = []

  constructor(
    private readonly max: number,
    private readonly filename: string,
    private readonly declared: string,
  ) {
    super({ highWaterMark: 256 * 1024 })
  }

  private digest: string | null = null

  /** The file's sha256, lower-case hex (once the stream has ended). */
  sha256(): string {
    this.digest ??= this.hash.digest('hex')
    return this.digest
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    this.size += chunk.length
    if (this.size > this.max) return done(uploadTooLarge(this.max))
    this.hash.update(chunk)
    if (this.headBytes < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headBytes)
      this.head.push(Buffer.from(part))
      this.headBytes += part.length
    }
    if (this.type) {
      if (this.text && this.markupIn(chunk)) return done(unsupportedMediaType('The text holds markup (HTML, SVG or XML)'))
      return done(null, chunk)
    }
    this.pending.push(chunk)
    if (this.size < SAMPLE_BYTES) return done()
    this.decide().then(() => done(), done)
  }

  override _flush(done: TransformCallback) {
    if (this.type) return done()
    this.decide().then(() => done(), done)
  }

  private async decide() {
    const all = Buffer.concat(this.pending)
    this.type = await detectType(all.subarray(0, SAMPLE_BYTES), this.filename, this.declared)
    this.pending = []
    this.text = this.type.startsWith('text/')
    // The sample was scanned by detectType; what came with it past the sample is scanned here.
    if (this.text) {
      this.tail = all.subarray(Math.max(0, SAMPLE_BYTES - MARKUP_OVERLAP), SAMPLE_BYTES).toString('latin1')
      if (all.length > SAMPLE_BYTES && this.markupIn(all.subarray(SAMPLE_BYTES))) throw unsupportedMediaType('The text holds markup (HTML, SVG or XML)')
    }
    this.push(all)
  }

  private text = false
  /** The end of the text scanned so far, so markup cut across two chunks is found. */
  private tail = ''

  /** Whether markup starts in `chunk` (or across the previous chunk's end); the whole text file is scanned. */
  private markupIn(chunk: Buffer): boolean {
    const s = this.tail + chunk.toString('latin1')
    this.tail = s.slice(-MARKUP_OVERLAP)
    return MARKUP.test(s)
  }

  /** The head of the file (for image dimensions). */
  headBuffer(): Buffer {
    return Buffer.concat(this.head)
  }
}
