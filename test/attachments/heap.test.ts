import { createHash } from 'node:crypto'
import { constants, PerformanceObserver } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'
import { storageEnv, uploadForm } from './fixtures.js'

/**
 * Uploads ask V8 for a scavenge every 16 MiB of file read (src/heap.ts, docs/attachments.md
 * "Third round"): the socket reads' dead Buffers are freed by a young-generation collection
 * instead of piling up until V8 answers them with full mark-compacts. Counted from the process's
 * own GC entries: a forced collection is one V8 ran because it was asked (tap never asks). V8
 * serves the request with a scavenge, or, when a marking of the whole heap is already under way,
 * by finishing that marking: either is one forced entry.
 */
const MiB = 1024 * 1024

t.test('uploads ask for one scavenge per 16 MiB of file, and V8\'s gc stays hidden', async (t) => {
  const storage = await storageEnv(t, 'local')
  const { app } = await build(t, { env: { ...storage.env, UPLOAD_MAX_BYTES: String(40 * MiB), JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)

  const forced: number[] = []
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const d = (e as unknown as { detail: { kind: number; flags: number } }).detail
      if (d.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced.push(d.kind)
    }
  })
  obs.observe({ entryTypes: ['gc'] })
  t.teardown(() => obs.disconnect())
  const upload = async (bytes: number, name: string) => {
    const data = Buffer.alloc(bytes, `${name} line\n`)
    const form = uploadForm(conv.id, { filename: name, contentType: 'text/plain', data })
    const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...ws.agent.headers, ...form.headers }, payload: form.payload })
    t.equal(res.statusCode, 201, res.body)
    t.equal(res.json().size, bytes)
    t.equal(res.json().sha256, createHash('sha256').update(data).digest('hex'), 'the file is stored whole')
    // GC entries reach observers on a later turn of the event loop.
    await sleep(20)
  }

  await upload(100_000, 'small.txt')
  t.equal(forced.length, 0, 'a small upload asks for none')
  await upload(20 * MiB, 'a.txt')
  await upload(20 * MiB, 'b.txt')
  // 40 MiB read: two (the count carries over from one upload to the next), never one per chunk.
  t.equal(forced.length, 2, 'two collections asked for 40 MiB')
  t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'gc is not exposed to the process')
})
