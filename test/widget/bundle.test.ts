// GET /widget.js: one script, compressed, cached by its content hash, under 40 KB compressed.
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { build } from '../helper.js'

const { app } = await build(t)

t.test('serves the bundle with its content hash as ETag, short cache on the stable URL', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/widget.js' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/javascript/)
  t.match(res.headers.etag, /^"[0-9a-f]{16}"$/)
  t.equal(res.headers['cache-control'], 'public, max-age=300, stale-while-revalidate=3600')
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['cross-origin-resource-policy'], 'cross-origin')
  t.equal(res.headers['content-encoding'], undefined, 'nothing asked, nothing compressed')
  t.ok(res.rawPayload.length > 10_000, `the bundle holds the widget and its Socket.IO client (${res.rawPayload.length} bytes)`)
  t.match(res.payload, /page:visit/, 'it is the widget')
  t.notMatch(res.payload, /sourceMappingURL/, 'no source map reference')
})

t.test('the hash URL is immutable; another hash gets the current code with the short policy', async (t) => {
  const first = await app.inject({ method: 'GET', url: '/widget.js' })
  const hash = first.headers.etag!.toString().slice(1, -1)
  const pinned = await app.inject({ method: 'GET', url: `/widget.js?v=${hash}` })
  t.equal(pinned.statusCode, 200)
  t.equal(pinned.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.equal(pinned.payload, first.payload)
  const stale = await app.inject({ method: 'GET', url: '/widget.js?v=0123abcd' })
  t.equal(stale.statusCode, 200)
  t.equal(stale.headers['cache-control'], 'public, max-age=300, stale-while-revalidate=3600')
})

t.test('If-None-Match with the ETag (strong, weak or in a list) is a 304 without a body', async (t) => {
  const { etag } = (await app.inject({ method: 'GET', url: '/widget.js' })).headers
  for (const inm of [String(etag), `W/${etag}`, `"nope", ${etag}`]) {
    const res = await app.inject({ method: 'GET', url: '/widget.js', headers: { 'if-none-match': inm } })
    t.equal(res.statusCode, 304, inm)
    t.equal(res.payload, '')
  }
  const other = await app.inject({ method: 'GET', url: '/widget.js', headers: { 'if-none-match': '"0000000000000000"' } })
  t.equal(other.statusCode, 200)
})

t.test('brotli and gzip through @fastify/compress, each under 40 KB, decoding to the same bytes', async (t) => {
  const plain = await app.inject({ method: 'GET', url: '/widget.js' })
  const br = await app.inject({ method: 'GET', url: '/widget.js', headers: { 'accept-encoding': 'br, gzip' } })
  t.equal(br.headers['content-encoding'], 'br')
  t.match(br.headers.vary, /accept-encoding/i)
  t.same(brotliDecompressSync(br.rawPayload), plain.rawPayload)
  const gz = await app.inject({ method: 'GET', url: '/widget.js', headers: { 'accept-encoding': 'gzip' } })
  t.equal(gz.headers['content-encoding'], 'gzip')
  t.same(gunzipSync(gz.rawPayload), plain.rawPayload)
  t.ok(br.rawPayload.length < 40 * 1024, `brotli ${br.rawPayload.length} bytes`)
  t.ok(gz.rawPayload.length < 40 * 1024, `gzip ${gz.rawPayload.length} bytes`)
  t.comment(`widget.js: raw ${plain.rawPayload.length} B, gzip ${gz.rawPayload.length} B, brotli ${br.rawPayload.length} B (as served)`)
})

t.test('public and open to any origin; unknown query parameters are a 400 with the contract body', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/widget.js', headers: { origin: 'https://shop.example' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['access-control-allow-origin'], 'https://shop.example')
  const bad = await app.inject({ method: 'GET', url: '/widget.js?channel=1' })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { statusCode: 400, code: 'VALIDATION_ERROR' })
  const badV = await app.inject({ method: 'GET', url: '/widget.js?v=<script>' })
  t.equal(badV.statusCode, 400)
})

t.test('other routes are not compressed (the plugin is opt-in per route)', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/docs/json', headers: { 'accept-encoding': 'br, gzip' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-encoding'], undefined)
})
