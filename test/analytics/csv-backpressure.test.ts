import { request } from 'node:http'
import type { Socket } from 'node:net'
import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { insertConversations, insertGuest } from '../conversations/seed.js'
import { CSV_BATCH, CSV_PIECE, csvChunks } from '../../src/analytics/export.js'

/**
 * Issue 31: the CSV export streams with backpressure. A client that stops reading stops the
 * server: what the server has handed to the socket (`bytesWritten`, which counts what Node still
 * buffers) stays put while the client waits, far below the file's size; the database is not read
 * ahead of the client. Then the client reads the rest and gets every row, in order.
 *
 * 6,000 conversations of a guest with a 6,000-character name: about 36 MB of CSV, 6 batches,
 * more than the loopback's socket buffers can hide (a few MB).
 */
const ROWS = 6000
const NAME = 'N'.repeat(6000)

t.test('a slow download holds the export: nothing is produced while the client does not read', async (t) => {
  const sockets: Socket[] = []
  const { app } = await build(t, {
    register: (app) => app.addHook('onRequest', async (req) => {
      if (req.url.startsWith('/analytics/conversations.csv')) sockets.push(req.raw.socket)
    }),
  })
  const ws = await seedWorkspace(app)
  const guestId = await insertGuest(app, ws, NAME)
  const start = Date.UTC(2026, 9, 1) * 1000
  const convs = await insertConversations(app, ws, Array.from({ length: ROWS }, (_, i) => ({ guestId, createdAt: start + i * 1_000_000 })))
  t.ok(ROWS > 5 * CSV_BATCH, 'several batches')
  const base = new URL(await app.listen({ host: '127.0.0.1', port: 0 }))
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  const chunks: Buffer[] = []
  let received = 0
  const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path: '/analytics/conversations.csv?from=2026-09-01&to=2026-12-01', headers: ws.owner.headers }, resolve)
    req.on('error', reject)
    req.end()
  })
  t.equal(res.statusCode, 200)
  res.pause()
  // Take the first 64 KiB, then stop reading.
  while (received < 64 * 1024) {
    const c = res.read() as Buffer | null
    if (c) {
      chunks.push(c)
      received += c.length
    } else await new Promise((r) => res.once('readable', r))
  }
  await sleep(1500)
  const socket = sockets[0]!
  const held = socket.bytesWritten
  await sleep(1000)
  t.equal(socket.bytesWritten, held, `the server waits for the client: ${held} bytes handed to the socket, none more in a second`)

  // The rest, all of it.
  res.resume()
  res.on('data', (c: Buffer) => {
    chunks.push(c)
    received += c.length
  })
  await new Promise((r) => res.on('end', r))
  const body = Buffer.concat(chunks).toString()
  const lines = body.split('\r\n').filter(Boolean)
  t.equal(lines.length, ROWS + 1, 'every row, after the header')
  t.same(lines.slice(1).map((l) => l.slice(0, 36)), convs.map((c) => c.id), 'oldest first')
  t.ok(held < received / 2, `while the client waited the server had handed over ${(held / 2 ** 20).toFixed(1)} MiB of ${(received / 2 ** 20).toFixed(1)} MiB`)

  // What reaches Node from the database: one string per CSV_PIECE rows, not one per batch (a
  // batch's string was a large-object allocation only a major collection frees; docs/analytics.md).
  const pieces: string[] = []
  for await (const piece of csvChunks(app.deps.reads, { workspaceId: ws.workspaceId, from: '2026-09-01T00:00:00Z', to: '2026-12-01T00:00:00Z' })) pieces.push(piece)
  const rowsPer = pieces.slice(1).map((p) => p.split('\r\n').length - 1)
  t.equal(pieces.length, 1 + Math.ceil(ROWS / CSV_PIECE), 'the header, then a string per piece')
  t.ok(rowsPer.every((n) => n > 0 && n <= CSV_PIECE), `at most ${CSV_PIECE} rows a string`)
  t.equal(pieces.join(''), body, 'the pieces are the file')
})
