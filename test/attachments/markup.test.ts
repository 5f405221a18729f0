import t from 'tap'
import { MarkupScanner } from '../../src/attachments/detect.js'

/**
 * The streaming markup scan (issue 31: bytes, not strings): whatever the chunks, it finds what the
 * regular expression finds in the whole text, including markup cut between two chunks or spread
 * over several tiny ones, and nothing in harmless text.
 */
const scan = (text: string, cuts: number[]) => {
  const bytes = Buffer.from(text, 'latin1')
  const s = new MarkupScanner()
  let from = 0
  for (const cut of [...cuts, bytes.length]) {
    if (s.found(bytes.subarray(from, cut))) return true
    from = cut
  }
  return false
}
/** Every way of cutting `text` once, and into chunks of every size from 1 to 40 bytes. */
const everyCut = (text: string) => {
  const ways: number[][] = []
  for (let i = 0; i <= text.length; i++) ways.push([i])
  for (let size = 1; size <= 40; size++) ways.push(Array.from({ length: Math.ceil(text.length / size) }, (_, i) => i * size))
  return ways
}

const pad = 'plain words, x<a and <none> and John <j@x.com> < 3 <= 4 '
const markup = ['<script>', '</SCRIPT >', '<!doctype html>', '<?xml version="1.0"?>', '<!-- c -->', '<![CDATA[x]]>', '<svg/>', '<form\taction=x>', '<xsl:stylesheet-of-a-rather-long-name-indeed version="1.0">', '<iframe src=x>']
const harmless = ['<scripts>', '<xsl:>', '<b>bold</b>', '<htmlx>', `<${'a'.repeat(300)}>`, '<!doc', '<scrip', 'a <<<< b']

for (const m of markup) {
  t.test(`finds ${JSON.stringify(m)} wherever the chunks are cut`, async (t) => {
    const text = `${pad}${m}${pad}`
    const missed = everyCut(text).filter((cuts) => !scan(text, cuts))
    t.same(missed, [], 'found with every cut')
    t.equal(scan(m, []), true, 'at the very end of the file')
    t.equal(scan(`${'x'.repeat(5000)}${m}`, [4999]), true, 'after a long text')
  })
}

t.test('harmless angle brackets are text, wherever the chunks are cut', async (t) => {
  for (const h of harmless) {
    const text = `${pad}${h}${pad}`
    const found = everyCut(text).filter((cuts) => scan(text, cuts))
    t.same(found, [], JSON.stringify(h))
  }
})

t.test('the carry is bounded: a long run of name bytes after `<` is not held whole', async (t) => {
  const s = new MarkupScanner()
  t.equal(s.found(Buffer.from(`<xsl:${'a'.repeat(10_000)}`)), false)
  t.ok(((s as unknown as { carry: Buffer | null }).carry?.length ?? 0) <= 256)
  t.equal(s.found(Buffer.from('x <script>')), true, 'and the scan goes on')
})
