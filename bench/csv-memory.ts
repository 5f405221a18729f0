/**
 * Issue 31, the CSV export's memory: the API's peak RSS while it streams
 * `GET /analytics/conversations.csv` of the largest workspace's year `times` times in a row (8 by
 * default: a year-sized export's worth of rows on a small bench database), from a database seeded
 * by `npm run bench -- --keep-db`. The API is the production build (`npm run build`, then
 * `node dist/src/server.js`, as the benchmark runs it) in a child process; its RSS is sampled from
 * /proc every 50 ms; this process is the client and keeps nothing.
 *
 *   npm run build && node --import tsx bench/csv-memory.ts <database> [times]
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { memberToken, TEST_JWT_SECRET } from '../test/helper.js'
import { databaseUrl } from '../test/setup/database.js'
import { freePort } from './lib/server.js'

const [db, times = '8'] = process.argv.slice(2)
if (!db) throw new Error('usage: bench/csv-memory.ts <database> [times]')
const meta = postgres(databaseUrl(db), { max: 1 })
const [{ data }] = await meta<{ data: { seed: { largest: { id: string; size: number; owner: { userId: string } } } } }[]>`SELECT data FROM bench_meta`
await meta.end()
const largest = data.seed.largest

const port = await freePort()
const child = spawn(process.execPath, ['dist/src/server.js'], {
  env: {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl(db),
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `csv-memory:${process.pid}:`,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    VISITOR_SESSION_SECRET: `csv-memory-${'x'.repeat(32)}`,
    JOBS_WORKER: 'false',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
})
const rss = () => Math.round(Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024)
for (let i = 0; ; i++) {
  await new Promise((r) => setTimeout(r, 200))
  try {
    if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) break
  } catch {}
  if (i > 300) throw new Error('the API did not start')
}
const headers = { authorization: `Bearer ${await memberToken(largest.owner.userId)}`, 'x-workspace-id': largest.id }
const DAY = 86_400_000
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const path = `/analytics/conversations.csv?from=${day(Date.now() - 365 * DAY)}&to=${day(Date.now() + DAY)}`

const before = rss()
let peak = before
const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50)
const t0 = Date.now()
let bytes = 0
let rows = 0
const each: string[] = []
for (let i = 0; i < Number(times); i++) {
  const started = Date.now()
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
  if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`)
  for await (const chunk of res.body!) {
    bytes += chunk.length
    for (let j = chunk.indexOf(10); j !== -1; j = chunk.indexOf(10, j + 1)) rows++
  }
  rows-- // the header line
  each.push(`${((Date.now() - started) / 1000).toFixed(1)} s/${peak} MiB`)
}
clearInterval(sampler)
console.log(
  `${times} exports, ${rows.toLocaleString('en')} rows, ${(bytes / 2 ** 20).toFixed(0)} MiB in ${((Date.now() - t0) / 1000).toFixed(1)} s; ` +
    `API RSS ${before} -> peak ${peak} MiB; each export (time/peak so far): ${each.join(', ')}`,
)
child.kill('SIGTERM')
process.exit(0)
