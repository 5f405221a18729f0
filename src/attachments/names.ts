/**
 * File names as stored and served. The stored name has no path, no control or bidi-override
 * characters and at most 255 UTF-8 bytes (cut on a character boundary, the extension kept).
 */
export function sanitiseFilename(raw: string | undefined): string {
  let name = (raw ?? '').normalize('NFC')
  name = name.split(/[\\/]/).pop() ?? ''
  // Control characters, bidi overrides and isolates (which can disguise an extension), NUL.
  name = name.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '')
  name = name.replace(/^[\s.]+/, '').trim()
  if (!name) name = 'file'
  if (Buffer.byteLength(name) <= 255) return name
  const dot = name.lastIndexOf('.')
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : ''
  const chars = [...name.slice(0, name.length - ext.length)]
  while (chars.length && Buffer.byteLength(chars.join('') + ext) > 255) chars.pop()
  return chars.join('') + ext
}

/** RFC 6266 Content-Disposition: an ASCII fallback name plus `filename*` (RFC 8187) for others. */
export function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_')
  if (ascii === filename) return `${kind}; filename="${ascii}"`
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`
}

/** Extensions a text/plain file may keep: names that open as text, never as a page. */
const TEXT_EXTENSIONS = new Set(['txt', 'text', 'log', 'md', 'markdown', 'csv', 'tsv', 'json', 'yaml', 'yml', 'ini', 'cfg', 'conf', 'rst', 'asc', 'srt', 'vtt'])

/**
 * The stored name of a file of `type` (API.md section 10: the extension agrees with the detected
 * type): a text file whose extension is not a text one gets `.txt` (`invoice.html` ->
 * `invoice.html.txt`), a CSV whose name does not end in `.csv` gets `.csv`; a name without an
 * extension is left as it is. Other types keep their name: they are served with their detected
 * type and `nosniff`, and the stored name is never HTML, SVG or XML for a text that is markup
 * (refused with 415 by detect.ts).
 */
export function nameForType(filename: string, type: string): string {
  const dot = filename.lastIndexOf('.')
  const ext = dot > 0 ? filename.slice(dot + 1).toLowerCase() : null
  if (type === 'text/csv') return ext === 'csv' ? filename : sanitiseFilename(`${filename}.csv`)
  if (type === 'text/plain' && ext !== null && !TEXT_EXTENSIONS.has(ext)) return sanitiseFilename(`${filename}.txt`)
  return filename
}
