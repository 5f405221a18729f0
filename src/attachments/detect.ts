import { createHash } from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'
import { fileTypeFromBuffer } from 'file-type'
import { unsupportedMediaType, uploadTooLarge } from '../errors.js'
import { bodyBytesRead } from '../heap.js'

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
/** The inspector's buffer on each side (bytes waiting to be inspected, and inspected bytes waiting for the store). */
const INSPECTOR_HWM = 64 * 1024

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
/**
 * Finds MARKUP in a stream of chunks without turning them into strings: only the bytes after each
 * `<` are read (Buffer.indexOf, memchr), as a short latin1 window. A window is WINDOW bytes, longer
 * while it ends inside a name (`<xsl:` elements have no fixed length), up to MAX_TOKEN; a window cut
 * by the chunk's end is kept (`carry`, at most MAX_TOKEN bytes) and read again joined with the next
 * chunk's start, so markup cut between two chunks is found. A text without `<` costs one memchr per
 * chunk: the scan used to copy every chunk into a string (and the previous 32 bytes in front of
 * it) and run the regular expression over all of it, the largest JavaScript cost of a text upload.
 */
export class MarkupScanner {
  private carry: Buffer | null = null

  /** Whether markup starts in `chunk`, or in the bytes before it and runs into it. */
  found(chunk: Buffer): boolean {
    const carry = this.carry
    if (carry) {
      this.carry = null
      const joined = Buffer.concat([carry, chunk.subarray(0, MAX_TOKEN)])
      // Only the `<`s of the carry: the chunk's own are read below, in the chunk itself.
      if (this.scan(joined, carry.length, joined.length === carry.length + chunk.length)) return true
      // Still cut: the carried window took in all of this (short) chunk; read on with the next.
      if (this.carry) return false
    }
    return this.scan(chunk, chunk.length, true)
  }

  /** Reads the windows of the `<`s before `until`; `open`: more bytes may follow `buf` (carry a cut window). */
  private scan(buf: Buffer, until: number, open: boolean): boolean {
    for (let p = buf.indexOf(LT); p !== -1 && p < until; p = buf.indexOf(LT, p + 1)) {
      let end = Math.min(buf.length, p + WINDOW)
      while (end < buf.length && end - p < MAX_TOKEN && isNameByte(buf[end - 1]!)) end++
      if (MARKUP.test(buf.toString('latin1', p, end))) return true
      if (open && end === buf.length && (end - p < WINDOW || isNameByte(buf[end - 1]!)) && end - p < MAX_TOKEN) {
        // Cut by the end of the bytes seen so far: read again with the next chunk. The earliest
        // such `<` covers every later one.
        this.carry = Buffer.from(buf.subarray(p))
        return false
      }
    }
    return false
  }
}

const LT = 0x3c
/** Bytes read after a `<`: every MARKUP match but an `xsl:` element's fits (`<![cdata[` is 9). */
const WINDOW = 32
/** The longest window (an `<xsl:...` name longer than this is not markup a processor knows). */
const MAX_TOKEN = 256
/** Bytes a name in a MARKUP match is made of: the window grows while it ends in one. */
const isNameByte = (b: number) => (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x3a || b === 0x5f

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
 * store. Keeps the head of an image for its dimensions; scans a text file for markup. Memory: the
 * sample, an image's head, and the stream's own buffers (`highWaterMark` each side).
 */
export class UploadInspector extends Transform {
  size = 0
  type: string | null = null
  /** An image's first HEAD_BYTES, for its dimensions; nothing is kept of other types. */
  private head: Buffer[] = []
  private headBytes = 0
  private readonly hash = createHash('sha256')
  private pending: Buffer[] = []
  private markup: MarkupScanner | null = null

  constructor(
    private readonly max: number,
    private readonly filename: string,
    private readonly declared: string,
  ) {
    super({ highWaterMark: INSPECTOR_HWM })
  }

  private digest: string | null = null

  /** The file's sha256, lower-case hex (once the stream has ended). */
  sha256(): string {
    this.digest ??= this.hash.digest('hex')
    return this.digest
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    this.size += chunk.length
    // The socket reads behind these bytes are dead once written: a scavenge per 16 MiB frees them.
    bodyBytesRead(chunk.length)
    if (this.size > this.max) return done(uploadTooLarge(this.max))
    this.hash.update(chunk)
    if (this.type) {
      if (this.markup?.found(chunk)) return done(unsupportedMediaType('The text holds markup (HTML, SVG or XML)'))
      if (this.headBytes < HEAD_BYTES && IMAGE_TYPES.has(this.type)) this.keepHead(chunk)
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
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending)
    this.pending = []
    this.type = await detectType(all.subarray(0, SAMPLE_BYTES), this.filename, this.declared)
    if (this.type.startsWith('text/')) {
      // detectType scanned the sample; the scanner reads it again (4 KiB) so a tag cut at the
      // sample's end is joined with what follows, then everything that came with it.
      this.markup = new MarkupScanner()
      if (this.markup.found(all)) throw unsupportedMediaType('The text holds markup (HTML, SVG or XML)')
    }
    if (IMAGE_TYPES.has(this.type)) this.keepHead(all)
    this.push(all)
  }

  /** A copy of the head's bytes: a view would hold the parser's whole chunk (and its neighbours) alive. */
  private keepHead(chunk: Buffer) {
    const part = chunk.subarray(0, HEAD_BYTES - this.headBytes)
    this.head.push(Buffer.from(part))
    this.headBytes += part.length
  }

  /** The head of the file (for image dimensions). */
  headBuffer(): Buffer {
    return Buffer.concat(this.head)
  }
}
