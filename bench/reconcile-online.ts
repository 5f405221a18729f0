/**
 * Issue 31, reconcile online: how long `GET /conversations/counts/reconcile` takes on the largest
 * workspace of a database seeded by `npm run bench -- --keep-db`, and how long writers wait for it.
 * Two apps on that database (build() from test/helper.ts): the reconciler (application_name
 * 'reconciler') and a writer marking random OPEN conversations seen in a loop (application_name
 * 'writers'); the longest lock wait of the writers is sampled from pg_locks every 10 ms.
 *
 *   node --import tsx bench/reconcile-online.ts <database> [checkout root, default this one]
 *
 * The root lets the same measurement run against another checkout (e.g. /work/main before the
 * change). Two reconciles: the first repairs whatever drift the database has, the second finds none.
 */
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
const [db, root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '')] = process.argv.slice(2)
if (!db) throw new Error('usage: bench/reconcile-online.ts <database> [checkout root]')
const { build, memberToken } = await import(`${root}/test/helper.ts`)
const { databaseUrl } = await import(`${root}/test/setup/database.ts`)
const url = databaseUrl(db)
const teardowns: (() => unknown)[] = []
const tt = { teardown: (fn: () => unknown) => teardowns.push(fn) }
const rec = await build(tt, { databaseUrl: `${url}?application_name=reconciler`, env: { JOBS_WORKER: 'false', LOG_LEVEL: 'warn', ROUTING_SWEEP_MS: '0' } })
const wr = await build(tt, { databaseUrl: `${url}?application_name=writers`, env: { JOBS_WORKER: 'false', LOG_LEVEL: 'warn', ROUTING_SWEEP_MS: '0' } })
const obs = postgres(url, { max: 1 })
const [{ data }] = await obs`SELECT data FROM bench_meta`
const ws = data.seed.largest
const headers = { authorization: `Bearer ${await memberToken(ws.owner.userId)}`, 'x-workspace-id': ws.id }
const ids = (await obs`SELECT id FROM conversations WHERE workspace_id = ${ws.id} AND deleted_at IS NULL AND status = 'OPEN' LIMIT 2000`).map((r: any) => r.id)
async function once(label: string) {
  let stop = false, maxWait = 0, writes = 0, maxLatency = 0
  const sampler = (async () => {
    while (!stop) {
      const [r] = await obs`SELECT max(extract(epoch from clock_timestamp() - l.waitstart) * 1000)::float8 AS ms
        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE NOT l.granted AND a.datname = current_database() AND a.application_name = 'writers'`
      if (r.ms && r.ms > maxWait) maxWait = r.ms
      await new Promise((r) => setTimeout(r, 10))
    }
  })()
  const writer = (async () => {
    while (!stop) {
      const t0 = performance.now()
      const res = await wr.app.inject({ method: 'PATCH', url: `/conversations/${ids[Math.floor(Math.random() * ids.length)]}/mark-seen`, headers })
      if (res.statusCode >= 500) console.log('write failed', res.body)
      maxLatency = Math.max(maxLatency, performance.now() - t0)
      writes++
    }
  })()
  await new Promise((r) => setTimeout(r, 300))
  const t0 = performance.now()
  const r = await rec.app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers })
  const ms = performance.now() - t0
  stop = true
  await Promise.all([sampler, writer])
  const j = r.json()
  console.log(`${label}: ${r.statusCode} corrected=${j.corrected} fixed=${j.conversationsFixed} in ${ms.toFixed(0)} ms; ${writes} mark-seen writes meanwhile, slowest ${maxLatency.toFixed(0)} ms; longest writer lock wait ${maxWait.toFixed(0)} ms`)
}
await once('first')
await once('second')
await obs.end()
for (const fn of teardowns.reverse()) await fn()
process.exit(0)
