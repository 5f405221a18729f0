import { createHash } from 'node:crypto'
import { readdirSync, rmSync, mkdirSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import t, { type Test } from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'
import { waitFor } from '../support/processes.js'
import { DRIVERS, storageEnv, uploadForm, type Driver } from './fixtures.js'

/**
 * A failed upload (client gone, too large, storage down) leaves no row and no object (API.md
 * section 10); storage down is 503 STORAGE_UNAVAILABLE and uploads work again when it returns.
 */
async function world(t: Test, driver: Driver, extra: Record<string, string> = {}) {
  const storage = await storageEnv(t, driver, extra)
  const { app } = await build(t, { env: { ...storage.env, JOBS_WORKER: 'false', ...extra } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  /** Every object in the store (local: every file, temporary ones included). */
  const objects = async (): Promise<string[]> => {
    if (storage.dir) return readdirSync(storage.dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name)
    const c = storage.s3!.client()
    try {
      const res = await c.send(new ListObjectsV2Command({ Bucket: storage.s3!.bucket }))
      return (res.Contents ?? []).map((o) => o.Key!)
    } finally {
      c.destroy()
    }
  }
  const rows = async () => (await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM attachments`)[0]!.n
  const upload = (headers: Record<string, string>, data: Buffer, filename = 'f.txt') => {
    const form = uploadForm(conv.id, { filename, data })
    return app.inject({ method: 'POST', url: '/uploads', headers: { ...headers, ...form.headers }, payload: form.payload })
  }
  return { app, storage, ws, guest, conv, objects, rows, upload }
}

for (const driver of DRIVERS) {
  t.test(`failure paths on ${driver} storage`, async (t) => {
    t.test('the client goes away mid-upload: no row, no object', async (t) => {
      const w = await world(t, driver)
      await w.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (w.app.server.address() as { port: number }).port
      const form = uploadForm(w.conv.id, { filename: 'big.txt', data: Buffer.alloc(8 * 1024 * 1024, 'a') })
      const sock = connect(port, '127.0.0.1')
      await new Promise((r) => sock.once('connect', r))
      const head = [
        'POST /uploads HTTP/1.1',
        'Host: 127.0.0.1',
        `x-visitor-session: ${w.guest.session}`,
        `content-type: ${form.headers['content-type']}`,
        `content-length: ${form.payload.length}`,
        '',
        '',
      ].join('\r\n')
      sock.write(head)
      // Well past type detection (the write to storage has begun), then gone.
      sock.write(form.payload.subarray(0, 6 * 1024 * 1024))
      // On disk the temporary file shows the write has begun (S3 holds the first part in memory).
      if (driver === 'local') await waitFor(async () => (await w.objects()).length > 0, 5000)
      else await new Promise((r) => setTimeout(r, 500))
      sock.destroy()
      // The server notices, aborts the write and removes what it wrote.
      await waitFor(async () => (await w.objects()).length === 0, 10_000)
      await new Promise((r) => setTimeout(r, 500))
      t.same(await w.objects(), [], 'no object, not even a partial one')
      t.equal(await w.rows(), 0, 'no row')
      // And the server is fine: the next upload works.
      const ok = await w.upload(w.guest.headers, Buffer.from('after'))
      t.equal(ok.statusCode, 201)
    })

    t.test('a form cut short inside the file: 400 at once (it hung), no row, no object', async (t) => {
      const w = await world(t, driver)
      const form = uploadForm(w.conv.id, { filename: '', data: Buffer.from([0x89, 0x50, 0x4e, 0x47]) })
      const end = form.payload.indexOf(Buffer.from([0x89, 0x50]))
      // The whole body arrives before the handler reads the file part (the conversation is looked
      // up first): the parser has already failed the part by then. Cut after 1 and 3 bytes of it.
      for (const keep of [1, 3]) {
        const res = await w.app.inject({
          method: 'POST',
          url: '/uploads',
          headers: { ...w.guest.headers, ...form.headers },
          payload: form.payload.subarray(0, end + keep),
        })
        t.equal(res.statusCode, 400, `cut after ${keep} byte(s) of the file`)
        t.same(res.json(), { statusCode: 400, error: 'Bad Request', code: 'VALIDATION_ERROR', message: 'The upload ended before the file was complete' })
      }
      t.same(await w.objects(), [])
      t.equal(await w.rows(), 0)
    })

    t.test('too large: 413, no row, no object', async (t) => {
      const w = await world(t, driver, { UPLOAD_MAX_BYTES_VISITOR: String(6 * 1024 * 1024) })
      const res = await w.upload(w.guest.headers, Buffer.alloc(6 * 1024 * 1024 + 1, 'a'))
      t.equal(res.statusCode, 413)
      t.same(await w.objects(), [])
      t.equal(await w.rows(), 0)
    })

    t.test('storage down: 503 STORAGE_UNAVAILABLE, no row, no object; works again when it returns', async (t) => {
      const w = await world(t, driver)
      const stored = (await w.upload(w.guest.headers, Buffer.from('before'))).json()
      const down = async () => {
        if (w.storage.s3) return w.storage.s3.stop()
        // The directory becomes a file: every write and read fails.
        rmSync(w.storage.dir!, { recursive: true, force: true })
        writeFileSync(w.storage.dir!, 'not a directory')
      }
      const up = async () => {
        if (w.storage.s3) return w.storage.s3.start()
        rmSync(w.storage.dir!, { force: true })
        mkdirSync(w.storage.dir!)
      }
      await down()
      const res = await w.upload(w.guest.headers, Buffer.alloc(100_000, 'b'))
      t.equal(res.statusCode, 503, res.body)
      t.equal(res.json().code, 'STORAGE_UNAVAILABLE')
      t.ok(res.headers['retry-after'])
      t.equal(await w.rows(), 1, 'no new row')
      const media = await w.app.inject({ url: stored.url, headers: w.guest.headers })
      t.equal(media.statusCode, 503, 'serving says so too')
      await up()
      t.same((await w.objects()).filter((k) => !k.includes(stored.id)), [], 'no object of the failed upload')
      const again = await w.upload(w.guest.headers, Buffer.from('after'))
      t.equal(again.statusCode, 201, 'no restart needed')
    })
  })
}

t.test('visitor uploads are limited per guest (VISITOR_UPLOADS_PER_HOUR); members are not', async (t) => {
  const w = await world(t, 'local', { VISITOR_UPLOADS_PER_HOUR: '2' })
  t.equal((await w.upload(w.guest.headers, Buffer.from('1'))).statusCode, 201)
  t.equal((await w.upload(w.guest.headers, Buffer.from('2'))).statusCode, 201)
  const third = await w.upload(w.guest.headers, Buffer.from('3'))
  t.equal(third.statusCode, 429)
  t.equal(third.json().code, 'RATE_LIMITED')
  t.ok(Number(third.headers['retry-after']) > 0)
  const other = await seedGuest(w.app, w.ws, 'Other')
  const otherConv = await startConversation(w.app, other)
  const form = uploadForm(otherConv.id, { filename: 'o.txt', data: Buffer.from('o') })
  const res = await w.app.inject({ method: 'POST', url: '/uploads', headers: { ...other.headers, ...form.headers }, payload: form.payload })
  t.equal(res.statusCode, 201, 'each guest has its own budget')
  for (let i = 0; i < 3; i++) t.equal((await w.upload(w.ws.agent.headers, Buffer.from('m'))).statusCode, 201)
})

t.test('large files on S3 (issue 32): a 12 MiB member upload goes in parts; one cut after two parts is aborted', async (t) => {
  const w = await world(t, 's3')
  const s3 = w.storage.s3!
  const ops = (n: number) =>
    s3.requests.slice(n).map((r) => {
      const q = new URL(r.url, 'http://x').searchParams
      if (r.method === 'POST' && q.has('uploads')) return 'create'
      if (q.has('partNumber')) return 'part'
      if (r.method === 'POST' && q.has('uploadId')) return 'complete'
      if (r.method === 'DELETE' && q.has('uploadId')) return 'abort'
      return r.method
    })

  const text = Buffer.alloc(12 * 1024 * 1024, 'parley ')
  let n = s3.requests.length
  const res = await w.upload(w.ws.agent.headers, text, 'big.txt')
  t.equal(res.statusCode, 201, res.body)
  t.same(ops(n), ['create', 'part', 'part', 'part', 'complete'], 'three parts, completed')
  const media = await w.app.inject({ url: res.json().url, headers: w.ws.agent.headers })
  t.equal(media.statusCode, 200)
  t.equal(createHash('sha256').update(media.rawPayload).digest('hex'), createHash('sha256').update(text).digest('hex'), 'the same bytes')

  // The client goes away once two parts are in the store: the multipart upload is aborted, nothing kept.
  const rows = await w.rows()
  const objects = await w.objects()
  await w.app.listen({ port: 0, host: '127.0.0.1' })
  const port = (w.app.server.address() as { port: number }).port
  const form = uploadForm(w.conv.id, { filename: 'cut.txt', data: Buffer.alloc(14 * 1024 * 1024, 'parley ') })
  const sock = connect(port, '127.0.0.1')
  await new Promise((r) => sock.once('connect', r))
  sock.write([
    'POST /uploads HTTP/1.1', 'Host: 127.0.0.1', `authorization: ${w.ws.agent.headers.authorization}`, `x-workspace-id: ${w.ws.agent.headers['x-workspace-id']}`,
    `content-type: ${form.headers['content-type']}`, `content-length: ${form.payload.length}`, '', '',
  ].join('\r\n'))
  n = s3.requests.length
  sock.write(form.payload.subarray(0, 13 * 1024 * 1024))
  await waitFor(async () => ops(n).filter((o) => o === 'part').length >= 2, 10_000)
  sock.destroy()
  await waitFor(async () => ops(n).includes('abort'), 10_000)
  const seen = ops(n)
  t.notOk(seen.includes('complete'), `never completed (${seen.join(', ')})`)
  t.same(await w.objects(), objects, 'no object')
  t.equal(await w.rows(), rows, 'no row')
})
