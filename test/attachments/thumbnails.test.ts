import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'
import { waitFor } from '../support/processes.js'
import { jpeg, png, storageEnv, uploadForm } from './fixtures.js'

/**
 * The thumbnail bomb (issue 32; API.md section 2, "thumbnails made"): at most 2 thumbnails made at
 * a time per process, none for an image over 40 megapixels (known at upload), a failure
 * remembered (never decoded again), identical requests in flight share one. What was decoded is
 * read from the process's thumbnail maker (`app.deps.thumbnails.stats()`: makes started, requests
 * that joined one) and the `thumb_refusal` column, never from timings.
 */
async function world(t: Test) {
  const storage = await storageEnv(t, 'local')
  const { app } = await build(t, { env: { ...storage.env, JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  const upload = async (filename: string, data: Buffer) => {
    const form = uploadForm(conv.id, { filename, contentType: filename.endsWith('.png') ? 'image/png' : 'image/jpeg', data })
    const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...guest.headers, ...form.headers }, payload: form.payload })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json() as { id: string; url: string; width?: number; height?: number }
  }
  const thumb = (url: string) => app.inject({ url: `${url}?variant=thumb`, headers: guest.headers })
  const refusal = async (id: string) => (await app.deps.sql<{ r: string | null }[]>`SELECT thumb_refusal AS r FROM attachments WHERE id = ${id}`)[0]!.r
  const stats = () => app.deps.thumbnails.stats()
  return { app, storage, upload, thumb, refusal, stats }
}

t.test('over 40 megapixels: known at upload, 400 NO_THUMBNAIL, never decoded', async (t) => {
  const w = await world(t)
  // 6,400 x 6,400 = 40.96 MP, one flat colour: a small file.
  const big = await sharp({ create: { width: 6400, height: 6400, channels: 3, background: { r: 10, g: 120, b: 200 } } }).jpeg({ progressive: true }).toBuffer()
  const a = await w.upload('big.jpg', big)
  t.match(a, { width: 6400, height: 6400 })
  t.equal(await w.refusal(a.id), 'too_large', 'remembered at upload, from the header')
  for (let i = 0; i < 3; i++) {
    const res = await w.thumb(a.url)
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'NO_THUMBNAIL')
  }
  t.equal(w.stats().started, 0, 'no thumbnail was started: nothing decoded')
  // A row whose size was not known at upload (a header past the first 64 KiB): sharp's
  // limitInputPixels refuses it from the header, before decoding, and that is remembered too.
  await w.app.deps.sql`UPDATE attachments SET width = NULL, height = NULL, thumb_refusal = NULL WHERE id = ${a.id}`
  const res = await w.thumb(a.url)
  t.equal(res.json().code, 'NO_THUMBNAIL')
  t.equal(await w.refusal(a.id), 'too_large')
  t.equal(w.stats().started, 1, 'one make started, refused by limitInputPixels')
  t.equal((await w.thumb(a.url)).json().code, 'NO_THUMBNAIL')
  t.equal(w.stats().started, 1, 'and not again')
})

t.test('a truncated image: 400 NO_THUMBNAIL once decoded, remembered, never decoded again', async (t) => {
  const w = await world(t)
  const whole = await jpeg(900, 700)
  const a = await w.upload('cut.jpg', whole.subarray(0, Math.floor(whole.length * 0.6)))
  t.match(a, { width: 900, height: 700 }, 'the header is whole')
  t.equal(await w.refusal(a.id), null)
  const first = await w.thumb(a.url)
  t.equal(first.statusCode, 400)
  t.equal(first.json().code, 'NO_THUMBNAIL')
  t.equal(await w.refusal(a.id), 'unreadable', 'remembered on the row')
  t.equal(w.stats().started, 1)
  for (let i = 0; i < 3; i++) t.equal((await w.thumb(a.url)).json().code, 'NO_THUMBNAIL')
  t.equal(w.stats().started, 1, 'no second decode')
  const [row] = await w.app.deps.sql`SELECT thumb_key FROM attachments WHERE id = ${a.id}`
  t.equal(row!.thumb_key, null)
})

t.test('at most 2 made at a time; identical requests in flight share one', async (t) => {
  const w = await world(t)
  // Six images whose stored bytes are FIFOs: reading one blocks until the test writes its bytes,
  // so the makes stay in flight until released and what runs and waits can be read off.
  const files: { id: string; url: string; bytes: Buffer; path: string }[] = []
  for (let i = 0; i < 6; i++) {
    const bytes = await png(400 + i, 300)
    const a = await w.upload(`p${i}.png`, bytes)
    const [row] = await w.app.deps.sql<{ key: string }[]>`SELECT storage_key AS key FROM attachments WHERE id = ${a.id}`
    const path = join(w.storage.dir!, row!.key)
    rmSync(path)
    execFileSync('mkfifo', ['-m', '600', path])
    files.push({ ...a, bytes, path })
  }
  const requests = [...files.map((f) => w.thumb(f.url)), w.thumb(files[0]!.url), w.thumb(files[0]!.url)]
  await waitFor(() => {
    const s = w.stats()
    return s.running.length === 2 && s.waiting === 4 && s.joined === 2
  })
  const s = w.stats()
  t.equal(s.running.length, 2, 'two made at once')
  t.equal(s.waiting, 4, 'four wait for a slot')
  t.equal(s.joined, 2, 'the two requests for the same file joined the first')
  t.equal(s.started, 2)

  // Release what runs, as it starts, until all are done.
  const released = new Set<string>()
  while (released.size < files.length) {
    await waitFor(() => w.stats().running.some((id) => !released.has(id)))
    const now = w.stats()
    t.ok(now.running.length <= 2, `never more than two (${now.running.length})`)
    for (const id of now.running.filter((r) => !released.has(r))) {
      released.add(id)
      const f = files.find((x) => x.id === id)!
      await writeFile(f.path, f.bytes)
    }
  }
  const answers = await Promise.all(requests)
  t.same(answers.map((r) => r.statusCode), [200, 200, 200, 200, 200, 200, 200, 200])
  t.equal(w.stats().started, 6, 'six made for eight requests')
  t.ok(answers[6]!.rawPayload.equals(answers[0]!.rawPayload) && answers[7]!.rawPayload.equals(answers[0]!.rawPayload), 'the shared answer is the same thumbnail')
  t.equal((await sharp(answers[0]!.rawPayload).metadata()).width, 320)
})
