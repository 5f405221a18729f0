/**
 * Issue 31, the CSV export's memory: the API's peak RSS while it streams
 * `GET /analytics/conversations.csv` of the largest workspace's year from a database seeded by
 * `npm run bench -- --keep-db`. This process is the API (build() from test/helper.ts on that
 * database, listening on 127.0.0.1); the client reads over a real socket and keeps nothing.
 *
 *   node --import tsx bench/csv-memory.ts <database> [fast|slow]
 *
 * fast: read as fast as the bytes come. slow: read 64 KiB, then wait 20 ms (about 3 MiB/s), for
 * at most 20 s: a download slower than the database, where only backpressure bounds memory.
 * One scenario per process (freed memory is not always returned to the system).
 * Peak = VmHWM from /proc/self/status, reset (clear_refs 5) right before the request.
 */
import { request } from 'node:http'
import { readFileSync, writeFileSync } from 'node:fs'
import postgres from 'postgres'
import { build, memberToken } from '../test/helper.js'
import { databaseUrl } from '../test/setup/database.js'

const [dbName, mode = 'fast'] = process.argv.slice(2)
if (!dbName) throw new Error('usage: bench/csv-memory.ts <database> [fast|slow]')
const url = databaseUrl(dbName)

const mib = (kb: string) => Math.round(Number(kb) / 1024)
const field = (name: string) => mib(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))![1]!)

const meta = postgres(url, { max: 1 })
const [{ data }] = await meta<{ data: { seed: { largest: { id: string; size: number; owner: { userId: string } } } } }[]>`SELECT data FROM bench_meta`
await meta.end()
const largest = data.seed.largest

const teardowns: (() => unknown)[] = []
const { app } = await build({ teardown: (fn) => teardowns.push(fn) }, { databaseUrl: url, env: { JOBS_WORKER: 'false', LOG_LEVEL: 'warn' } })
const base = new URL(await app.listen({ host: '127.0.0.1', port: 0 }))
const headers = { authorization: `Bearer ${await memberToken(largest.owner.userId)}`, 'x-workspace-id': largest.id }
const DAY = 86_400_000
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const path = `/analytics/conversations.csv?from=${day(Date.now() - 365 * DAY)}&to=${day(Date.now() + DAY)}`

global.gc?.()
const before = field('VmRSS')
writeFileSync('/proc/self/clear_refs', '5') // VmHWM := VmRSS
let peak = before
const heap = { total: 0, used: 0, external: 0 }
const sampler = setInterval(() => {
  peak = Math.max(peak, field('VmRSS'))
  const m = process.memoryUsage()
  heap.total = Math.max(heap.total, m.heapTotal / 2 ** 20)
  heap.used = Math.max(heap.used, m.heapUsed / 2 ** 20)
  heap.external = Math.max(heap.external, (m.external + m.arrayBuffers) / 2 ** 20)
}, 50)
const t0 = Date.now()
const result = await new Promise<{ status: number; bytes: number; rows: number; cut: boolean }>((resolve, reject) => {
  const req = request({ host: base.hostname, port: base.port, path, headers }, (res) => {
    let bytes = 0
    let rows = -1 // the header line
    let cut = false
    const count = (chunk: Buffer) => {
      bytes += chunk.length
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++
    }
    res.on('end', () => resolve({ status: res.statusCode!, bytes, rows, cut }))
    res.on('error', reject)
    if (mode === 'fast') {
      res.on('data', count)
      return
    }
    // slow: pull 64 KiB at a time, 20 ms apart, for at most 20 s.
    res.pause()
    const timer = setInterval(() => {
      if (Date.now() - t0 > 20_000) {
        clearInterval(timer)
        cut = true
        res.destroy()
        resolve({ status: res.statusCode!, bytes, rows, cut })
        return
      }
      const chunk = res.read(64 * 1024) ?? res.read()
      if (chunk) count(chunk as Buffer)
    }, 20)
    res.on('end', () => clearInterval(timer))
  })
  req.on('error', reject)
  req.end()
})
clearInterval(sampler)
const seconds = (Date.now() - t0) / 1000
console.log(
  `${mode}: ${result.status}, ${result.rows.toLocaleString('en')} rows, ${(result.bytes / 2 ** 20).toFixed(1)} MiB in ${seconds.toFixed(1)} s` +
    `${result.cut ? ' (cut at 20 s)' : ''}; RSS before ${before} MiB, peak ${Math.max(peak, field('VmHWM'))} MiB (V8 heap total ${heap.total.toFixed(0)} MiB, used ${heap.used.toFixed(0)} MiB, external+buffers ${heap.external.toFixed(0)} MiB)`,
)
for (const fn of teardowns.reverse()) await fn()
process.exit(0)
