/**
 * Where an upload's (and a media read's) time goes, without the full benchmark's seeding: this
 * process is the API (the test app on a fresh test database, local storage in a temporary
 * directory, listening on 127.0.0.1); a child process is the client, so its CPU is not the API's.
 * The API's CPU profile covers the measured phase only (node:inspector), and lands in --out.
 *
 *   node --import tsx bench/upload-profile.ts upload [--rounds 10] [--out dir]      10 MiB uploads one after another: MB/s, and the raw write speed of the same directory
 *   node --import tsx bench/upload-profile.ts concurrent [--n 20]                     20 concurrent 10 MiB uploads: the API's peak RSS (VmHWM reset before)
 *   node --import tsx bench/upload-profile.ts layer:discard|multipart|write|hash-write                 the same client against bare servers: what each layer under the route costs
 *   node --import tsx bench/upload-profile.ts media [--seconds 10] [--connections 50] GET /media/:id of a 200 KB PNG, then the bare createReadStream ceiling (bench/ceiling-server.ts file), alternately
 *
 * --no-prof: no profile; --heap-prof: a sampling heap profile (what allocates) instead of the CPU one.
 * Then: node --import tsx bench/profile-summary.ts <out>/<mode>-<stamp>.cpuprofile
 * (docs/attachments.md, "Performance": the findings of issue 31 with this tool.)
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { request } from 'node:http'
import { Session } from 'node:inspector/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import type { Result as LoadResult } from 'autocannon'
import sharp from 'sharp'

const MiB = 1024 * 1024
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '10' },
    n: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    out: { type: 'string', default: join(tmpdir(), 'parley-upload-profile') },
    'no-prof': { type: 'boolean', default: false },
    // A sampling heap profile (what allocates) instead of the CPU profile.
    'heap-prof': { type: 'boolean', default: false },
    // Client side (the child): where to send what.
    url: { type: 'string' },
    conv: { type: 'string' },
    auth: { type: 'string' },
    ws: { type: 'string' },
    dir: { type: 'string' },
  },
})
const mode = positionals[0]

/** One upload as a client sends it (as bench/scenarios/attachments.ts does): three writes. */
function upload(url: string, headers: Record<string, string>, conversationId: string, data: Buffer, filename: string) {
  const boundary = `----prof${randomBytes(8).toString('hex')}`
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="conversationId"\r\n\r\n${conversationId}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  return new Promise<number>((resolve, reject) => {
    const req = request(new URL('/uploads', url), {
      method: 'POST',
      headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + data.length + tail.length },
    })
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.write(head)
    req.write(data)
    req.end(tail)
  })
}

async function rawWrite(dir: string, data: Buffer, rounds: number): Promise<number> {
  const t0 = performance.now()
  for (let i = 0; i < rounds; i++) {
    const path = join(dir, `raw-${process.pid}-${i}`)
    const chunks = Array.from({ length: Math.ceil(data.length / (64 * 1024)) }, (_, j) => data.subarray(j * 64 * 1024, (j + 1) * 64 * 1024))
    await pipeline(Readable.from(chunks), createWriteStream(path))
    await rm(path)
  }
  return (rounds * data.length) / MiB / ((performance.now() - t0) / 1000)
}

async function client() {
  const headers = { authorization: values.auth!, 'x-workspace-id': values.ws! }
  const data = Buffer.alloc(10 * MiB, 'parley attachment benchmark line\n')
  const send = (process.send as (m: unknown) => void).bind(process)
  if (mode === 'client-upload') {
    const rounds = Number(values.rounds)
    for (let i = 0; i < 3; i++) await upload(values.url!, headers, values.conv!, data, `warm-${i}.txt`)
    send({ phase: 'start' })
    await new Promise((r) => process.once('message', r))
    const raw1 = await rawWrite(values.dir!, data, 5)
    const t0 = performance.now()
    const statuses: number[] = []
    for (let i = 0; i < rounds; i++) statuses.push(await upload(values.url!, headers, values.conv!, data, `big-${i}.txt`))
    const mbs = (rounds * data.length) / MiB / ((performance.now() - t0) / 1000)
    const raw2 = await rawWrite(values.dir!, data, 5)
    send({ phase: 'done', mbs, raw: Math.max(raw1, raw2), statuses })
  } else if (mode === 'client-concurrent') {
    const n = Number(values.n)
    await upload(values.url!, headers, values.conv!, data, 'warm.txt')
    send({ phase: 'start' })
    await new Promise((r) => process.once('message', r))
    const t0 = performance.now()
    const statuses = await Promise.all(Array.from({ length: n }, (_, i) => upload(values.url!, headers, values.conv!, data, `c-${i}.txt`)))
    send({ phase: 'done', mbs: (n * data.length) / MiB / ((performance.now() - t0) / 1000), statuses })
  }
}

function child(args: string[]) {
  const c = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const messages: unknown[] = []
  const waiters: ((m: unknown) => void)[] = []
  c.on('message', (m) => (waiters.length ? waiters.shift()!(m) : messages.push(m)))
  return {
    proc: c,
    next: () => new Promise<any>((r) => (messages.length ? r(messages.shift()) : waiters.push(r))),
    send: (m: unknown) => c.send(m as object),
  }
}

/**
 * This process's garbage collections (the API's, in upload/concurrent/media): full mark-compacts
 * and scavenges with their main-thread milliseconds. Issue 31's finding: V8 answers every 64 MB
 * of short-lived Buffers (request bodies, file reads) with a full mark-compact of the whole heap.
 * Run with the image's NODE_OPTIONS (Dockerfile) for its young generation.
 */
function gcCounter() {
  const seen = { major: 0, majorMs: 0, minor: 0, minorMs: 0 }
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) (seen.major++, (seen.majorMs += e.duration))
      else if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) (seen.minor++, (seen.minorMs += e.duration))
    }
  })
  obs.observe({ entryTypes: ['gc'] })
  return {
    stop: () => {
      obs.disconnect()
      return `GC: ${seen.major} mark-compact (${seen.majorMs.toFixed(0)} ms), ${seen.minor} scavenges (${seen.minorMs.toFixed(0)} ms)`
    },
  }
}

/**
 * The layers under POST /uploads, each a bare server of its own, measured with the same client:
 * `discard` (node:http, the body read and dropped), `multipart` (Fastify + @fastify/multipart with
 * the route's options, the file part drained), `write` (the file part piped to
 * fs.createWriteStream), `hash-write` (and a sha256 on the way). What each layer costs is the
 * difference between two.
 */
/** One worker for the process (uploads one after another here): a digest per 'end', then a new hash. */
let sharedWorker: Worker | null = null
function hashWorker() {
  sharedWorker ??= new Worker(
    `const { parentPort } = require('node:worker_threads'); const { createHash } = require('node:crypto'); let h = createHash('sha256');
     parentPort.on('message', (m) => { if (m === 'end') { parentPort.postMessage(h.digest('hex')); h = createHash('sha256') } else h.update(m) })`,
    { eval: true },
  )
  sharedWorker.unref()
  return sharedWorker
}

async function bareServer(layer: string) {
  const { createHash } = await import('node:crypto')
  const { Transform, Writable } = await import('node:stream')
  const Fastify = (await import('fastify')).default
  const multipart = (await import('@fastify/multipart')).default
  const dir = mkdtempSync(join(tmpdir(), 'parley-layer-'))
  let n = 0
  const app = Fastify({ logger: false })
  if (layer === 'discard' || layer === 'discard-pipe') {
    app.addContentTypeParser('multipart/form-data', (_req, payload, done) => {
      // discard-pipe: through a Writable of the default 16 KiB highWaterMark, as request.pipe(busboy) does.
      if (layer === 'discard-pipe') payload.pipe(new Writable({ write: (_c, _e, cb) => cb() }))
      else payload.resume()
      payload.on('end', () => done(null, {}))
    })
    app.post('/uploads', async (_req, reply) => reply.code(201).send({}))
  } else {
    const bbHwm = process.env.BUSBOY_HWM ? { highWaterMark: Number(process.env.BUSBOY_HWM) } : {}
    await app.register(multipart, { ...bbHwm, throwFileSizeLimit: false, fileHwm: 256 * 1024, limits: { fileSize: 30 * MiB, files: 1, fields: 2, parts: 3 } })
    app.post('/uploads', async (request, reply) => {
      for await (const part of request.parts()) {
        if (part.type !== 'file') continue
        if (layer === 'multipart') {
          part.file.resume()
          await new Promise((r) => part.file.on('end', r))
        } else {
          const hash = createHash('sha256')
          const through = layer === 'hash-write' ? [new Transform({ highWaterMark: 256 * 1024, transform(c, _e, cb) { hash.update(c); cb(null, c) } })] : []
          // hash-worker-write: the sha256 on a worker thread, fed 1 MiB copies (transferred, not cloned).
          let digest: Promise<string> | null = null
          if (layer === 'hash-worker-write') {
            const worker = hashWorker()
            let batch: Buffer[] = []
            let bytes = 0
            const flush = () => {
              if (!bytes) return
              const copy = Buffer.concat(batch, bytes)
              worker.postMessage(copy, [copy.buffer as ArrayBuffer])
              batch = []
              bytes = 0
            }
            through.push(new Transform({
              highWaterMark: 256 * 1024,
              transform(c: Buffer, _e, cb) { batch.push(c); bytes += c.length; if (bytes >= 1024 * 1024) flush(); cb(null, c) },
              flush(cb) { flush(); digest = new Promise((r) => worker.once('message', (d: string) => { r(d) })); worker.postMessage('end'); cb() },
            }))
          }
          const path = join(dir, `f-${n++}`)
          await pipeline(part.file, ...(through as []), createWriteStream(path, { highWaterMark: 256 * 1024 }))
          if (digest) await digest
          await rm(path)
        }
      }
      return reply.code(201).send({})
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const c = child(['client-upload', '--rounds', values.rounds!, '--url', url, '--conv', 'x', '--auth', 'x', '--ws', 'x', '--dir', dir])
  await c.next()
  const cpu0 = process.cpuUsage()
  c.send('go')
  const r = await c.next()
  const cpu = process.cpuUsage(cpu0)
  const rounds = Number(values.rounds)
  console.log(`layer ${layer}: ${r.mbs.toFixed(0)} MB/s vs raw write ${r.raw.toFixed(0)} MB/s: ratio ${(r.mbs / r.raw).toFixed(2)}; statuses ${[...new Set(r.statuses)]}; server CPU user ${(cpu.user / 1000 / rounds).toFixed(1)} ms + sys ${(cpu.system / 1000 / rounds).toFixed(1)} ms per upload`)
  await app.close()
  rmSync(dir, { recursive: true, force: true })
}

async function server() {
  const { build, seedWorkspace, seedGuest } = await import('../test/helper.js')
  const { startConversation } = await import('../test/conversations/fixtures.js')
  const teardowns: (() => unknown)[] = []
  const storageDir = mkdtempSync(join(tmpdir(), 'parley-prof-files-'))
  const { app } = await build(
    { teardown: (fn) => teardowns.push(fn) },
    { env: { STORAGE_DIR: storageDir, JOBS_WORKER: 'false', UPLOAD_MAX_BYTES: String(30 * MiB) } },
  )
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  mkdirSync(values.out!, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const session = new Session()
  session.connect()
  const startProfile = async () => {
    if (values['no-prof']) return
    if (values['heap-prof']) {
      await session.post('HeapProfiler.enable')
      await session.post('HeapProfiler.startSampling', { samplingInterval: 16 * 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
      return
    }
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 200 })
    await session.post('Profiler.start')
  }
  const stopProfile = async (name: string) => {
    if (values['no-prof']) return
    if (values['heap-prof']) {
      const { profile } = await session.post('HeapProfiler.stopSampling')
      const file = join(values.out!, `${name}-${stamp}.heapprofile`)
      writeFileSync(file, JSON.stringify(profile))
      console.log(`heap profile: ${file}`)
      return
    }
    const { profile } = await session.post('Profiler.stop')
    const file = join(values.out!, `${name}-${stamp}.cpuprofile`)
    writeFileSync(file, JSON.stringify(profile))
    console.log(`profile: ${file}`)
  }
  const clientArgs = ['--url', url, '--conv', conv.id, '--auth', ws.agent.headers.authorization!, '--ws', ws.workspaceId, '--dir', storageDir]
  try {
    if (mode === 'upload') {
      const c = child(['client-upload', '--rounds', values.rounds!, ...clientArgs])
      await c.next()
      const cpu0 = process.cpuUsage()
      await startProfile()
      const gc = gcCounter()
      c.send('go')
      const r = await c.next()
      const gcs = gc.stop()
      await stopProfile('upload')
      const cpu = process.cpuUsage(cpu0)
      const rounds = Number(values.rounds)
      console.log(
        `upload: ${r.mbs.toFixed(0)} MB/s vs raw write ${r.raw.toFixed(0)} MB/s: ratio ${(r.mbs / r.raw).toFixed(2)}; statuses ${[...new Set(r.statuses)]}; ` +
          `API CPU (incl. raw-write phases' idle) user ${(cpu.user / 1000 / rounds).toFixed(0)} ms + sys ${(cpu.system / 1000 / rounds).toFixed(0)} ms per upload; ${gcs}`,
      )
    } else if (mode === 'concurrent') {
      const c = child(['client-concurrent', '--n', values.n!, ...clientArgs])
      await c.next()
      global.gc?.()
      // Reset VmHWM to the current RSS: the peak measured is this phase's.
      writeFileSync('/proc/self/clear_refs', '5')
      const before = process.memoryUsage().rss
      const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }
      const sampler = setInterval(() => {
        const m = process.memoryUsage()
        for (const k of Object.keys(peak) as (keyof typeof peak)[]) peak[k] = Math.max(peak[k], m[k])
      }, 5)
      await startProfile()
      const gc = gcCounter()
      c.send('go')
      const r = await c.next()
      const gcs = gc.stop()
      clearInterval(sampler)
      await stopProfile('concurrent')
      console.log(`peaks (MiB, sampled every 5 ms): ${Object.entries(peak).map(([k, v]) => `${k} ${(v / MiB).toFixed(0)}`).join(', ')}`)
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024
      console.log(`concurrent: RSS before ${(before / MiB).toFixed(0)} MiB, peak ${hwm.toFixed(0)} MiB (+${(hwm - before / MiB).toFixed(0)}); ${r.mbs.toFixed(0)} MB/s in all; statuses ${[...new Set(r.statuses)]}; ${gcs}`)
    } else if (mode === 'media') {
      const image = await sharp(randomBytes(255 * 255 * 3), { raw: { width: 255, height: 255, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer()
      const form = (await import('../test/attachments/fixtures.js')).uploadForm(conv.id, { filename: 'bench.png', contentType: 'image/png', data: image })
      const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...ws.agent.headers, ...form.headers }, payload: form.payload })
      const media = res.json() as { id: string }
      const file = join(storageDir, ws.workspaceId, media.id)
      const port = 20000 + Math.floor(Math.random() * 20000)
      const ceiling = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'ceiling-server.ts'), 'file'], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', PORT: String(port), FILE_PATH: file, FILE_TYPE: 'image/png' },
        stdio: 'inherit',
      })
      teardowns.push(() => ceiling.kill())
      for (let i = 0; i < 100; i++) {
        const ok = await fetch(`http://127.0.0.1:${port}/ready`).then(() => true, () => false)
        if (ok) break
        await new Promise((r) => setTimeout(r, 100))
      }
      const seconds = Number(values.seconds)
      const connections = Number(values.connections)
      // The load generator is a child process too (autocannon's workers would share this loop).
      const load = (target: string, headers: Record<string, string>) =>
        new Promise<LoadResult>((resolve, reject) => {
          const c = spawn(process.execPath, [join(import.meta.dirname, '..', 'node_modules', 'autocannon', 'autocannon.js'), '-j', '-c', String(connections), '-d', String(seconds), ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]), target], { stdio: ['ignore', 'pipe', 'ignore'] })
          let out = ''
          c.stdout.on('data', (d) => (out += d))
          c.on('exit', () => { try { resolve(JSON.parse(out)) } catch (e) { reject(e) } })
        })
      // CPU per request (user + sys, every thread of the server): steadier than latency on a shared machine.
      const cpuOf = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10 }
      const line = (name: string, r: LoadResult, cpuMs: number) =>
        console.log(`${name.padEnd(8)} ${r.requests.average.toFixed(0).padStart(6)} req/s  p50 ${r.latency.p50} ms  p90 ${r.latency.p90} ms  p99 ${r.latency.p99} ms  non2xx ${r.non2xx}  CPU ${((cpuMs * 1000) / r.requests.total).toFixed(0)} us/request`)
      const timed = async (pid: number, target: string, headers: Record<string, string>) => {
        const c0 = cpuOf(pid)
        const r = await load(target, headers)
        return [r, cpuOf(pid) - c0] as const
      }
      // Warm both up.
      await load(`${url}/media/${media.id}`, ws.agent.headers)
      await load(`http://127.0.0.1:${port}/file`, {})
      for (let round = 0; round < 2; round++) {
        if (round === 0) await startProfile()
        const gc = gcCounter()
        line('media', ...(await timed(process.pid, `${url}/media/${media.id}`, ws.agent.headers)))
        console.log(`media    ${gc.stop()}`)
        if (round === 0) await stopProfile('media')
        line('ceiling', ...(await timed(ceiling.pid!, `http://127.0.0.1:${port}/file`, {})))
      }
    }
  } finally {
    for (const fn of teardowns.reverse()) await fn()
    rmSync(storageDir, { recursive: true, force: true })
  }
}

if (mode?.startsWith('client-')) await client()
else if (mode?.startsWith('layer:')) await bareServer(mode.slice(6))
else if (mode === 'upload' || mode === 'concurrent' || mode === 'media') await server()
else {
  console.error('usage: upload-profile.ts upload|concurrent|media [--rounds N] [--n N] [--seconds S] [--connections C] [--out dir] [--no-prof]')
  process.exit(2)
}
process.exit(0)
