/**
 * What a read replica (DATABASE_READ_URL, API.md section 20) does for the primary during the reads
 * it takes over (docs/scaling.md "Measurements"): starts a PostgreSQL 15 primary and a streaming
 * replica (`pg_basebackup -R`, the engine tests' own support: test/engines/engines.ts) on free
 * ports, seeds the benchmark's data set on the primary (bench/lib/seed.ts), waits until the
 * replica has replayed it, then measures search-varied and the analytics scenarios against two
 * API processes (the production build) without DATABASE_READ_URL and with it, each scenario in
 * both modes back to back, --pairs times, the order flipped every pair: req/s, p50/p99, and the CPU time of the primary's and of the replica's postgres processes
 * during each measured run (utime + stime from /proc, the exited backends' through the
 * postmaster's cutime + cstime).
 *
 *   node --import tsx bench/replica-cost.ts --conversations 20000 --duration 8 --warmup 2 --pairs 2
 */
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startPrimaryAndReplica, waitFor } from '../test/engines/engines.js'
import { buildApi, prepareDatabase, startApi } from './lib/api.js'
import type { AreaScenario, BenchRun } from './lib/area.js'
import { cleanup, installSignalHandlers, interrupted, onCleanup } from './lib/cleanup.js'
import { connect, withDatabase } from './lib/db.js'
import { measure, runCannon, type Measurement } from './lib/load.js'
import { RESULTS_DIR } from './lib/paths.js'
import { fmtInt, step } from './lib/progress.js'
import { analytics } from './scenarios/analytics.js'
import { prewarm, search } from './scenarios/search.js'

const SCENARIOS = ['search-varied', ...analytics.ids.map((s) => s.id)]

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '20000' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    pairs: { type: 'string', default: '2' },
    scenarios: { type: 'string', default: SCENARIOS.join(',') },
    seed: { type: 'string', default: '42' },
    'no-build': { type: 'boolean', default: false },
    'redis-url': { type: 'string' },
  },
})
const int = (v: string) => Number(v.replaceAll('_', ''))
const opts = {
  conversations: int(values.conversations!),
  duration: int(values.duration!),
  warmup: int(values.warmup!),
  connections: int(values.connections!),
  pairs: int(values.pairs!),
  scenarios: new Set(values.scenarios!.split(',')),
  seed: int(values.seed!),
  redisUrl: values['redis-url'] ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
}
for (const s of opts.scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s} (one of ${SCENARIOS.join(', ')})`)

const TICKS = 100 // USER_HZ: /proc/<pid>/stat counts clock ticks of 1/100 s on Linux

/** CPU seconds of a PostgreSQL server so far: the postmaster, its live children, and its exited ones (cutime, cstime). */
function serverCpu(dataDir: string): number {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  let ticks = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited meanwhile
    }
    // Fields after the command name (which may hold spaces): state ppid ... utime(14) stime cutime cstime.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const pid = Number(entry)
    const ppid = Number(f[1])
    if (pid === postmaster) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
    else if (ppid === postmaster) ticks += Number(f[11]) + Number(f[12])
  }
  return ticks / TICKS
}

interface Row extends Measurement {
  pair: number
  mode: 'primary only' | 'with replica'
  primaryCpuS: number
  replicaCpuS: number
  seconds: number
  load1: number
}

async function main() {
  installSignalHandlers()
  mkdirSync(RESULTS_DIR, { recursive: true })
  if (!values['no-build']) buildApi()
  step('starting a PostgreSQL 15 primary and a streaming replica (pg_basebackup -R)')
  // As the dev server (the one npm run bench uses): 128 MB of shared buffers, no autovacuum.
  const { primary, replica } = await startPrimaryAndReplica({ teardown: (fn) => onCleanup('stop the PostgreSQL pair', fn) }, "shared_buffers = '128MB'\nautovacuum = off\n")
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15)
  const dbName = `parley_bench_replica_${stamp.toLowerCase()}`
  const dbUrl = withDatabase(primary.url(), dbName)
  const { sql, meta } = await prepareDatabase({ adminUrl: primary.url(), keepDb: false, conversations: opts.conversations, seed: opts.seed }, dbName, dbUrl)
  step(`primary: ${await prewarm(sql)}`) // creates the extension the replica's prewarm needs
  const replicaUrl = withDatabase(replica.url(), dbName)
  const onReplica = connect(replicaUrl, 2)
  onCleanup('close replica pool', () => onReplica.end({ timeout: 5 }))
  step('waiting for the replica to replay the seeded data')
  await waitFor(
    'the replica to replay the seeded data',
    async () => {
      const [{ lsn }] = await sql<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`
      const [{ ok }] = await onReplica<{ ok: boolean }[]>`SELECT pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS ok`
      return ok
    },
    600_000,
    500,
  )
  // Both servers hold the search relations in memory (the search area prewarms the primary's).
  step(`replica: ${await prewarm(onReplica)}`)

  // Both APIs run side by side (one idles while the other is measured), so each scenario is
  // measured back to back in the two modes, the order flipped every pair: the machine's other
  // work changes little between the two runs of a pair.
  const modes = ['primary only', 'with replica'] as const
  const apis = new Map<Row['mode'], { run: BenchRun; scenarios: AreaScenario[] }>()
  const wanted = (id: string) => opts.scenarios.has(id)
  for (const mode of modes) {
    const env = mode === 'with replica' ? { DATABASE_READ_URL: replicaUrl } : {}
    const run = await startApi(
      { redisUrl: opts.redisUrl, cpuProf: false, connections: opts.connections, duration: opts.duration, warmup: opts.warmup, env },
      dbName,
      dbUrl,
      sql,
      meta,
      `${stamp}_${mode === 'with replica' ? 'r' : 'p'}`,
    )
    if (mode === 'with replica') {
      await waitFor('the API to see the replica online', async () => (await (await fetch(`${run.api.url}/health`)).json()).replica === 'online', 30_000, 200)
    }
    const scenarios: AreaScenario[] = []
    for (const area of [search, analytics]) scenarios.push(...(await area.prepare(run, wanted)).scenarios.filter((s) => wanted(s.id)))
    apis.set(mode, { run, scenarios })
  }
  const rows: Row[] = []
  for (let pair = 1; pair <= opts.pairs; pair++) {
    for (const id of SCENARIOS.filter(wanted)) {
      for (const mode of pair % 2 ? modes : [...modes].reverse()) {
        const { run, scenarios } = apis.get(mode)!
        const s = scenarios.find((x) => x.id === id)!
        step(`pair ${pair}, ${mode}: ${s.id}`)
        if (!s.measure && opts.warmup > 0) await runCannon(run.api.url, s, s.connections ?? opts.connections, opts.warmup)
        const p0 = serverCpu(primary.dir)
        const r0 = serverCpu(replica.dir)
        const t0 = performance.now()
        const m = s.measure ? await s.measure() : await measure(run.api.url, run.api.pid, s, { ...run.load, warmup: 0 })
        const row: Row = {
          ...m,
          pair,
          mode,
          primaryCpuS: serverCpu(primary.dir) - p0,
          replicaCpuS: serverCpu(replica.dir) - r0,
          seconds: (performance.now() - t0) / 1000,
          load1: loadavg()[0]!,
        }
        rows.push(row)
        step(`  ${fmtRow(row)}`)
      }
    }
  }
  const health = await (await fetch(`${apis.get('with replica')!.run.api.url}/health`)).json()
  if (health.replica !== 'online') step(`the replica was ${health.replica} at the end: some reads may have gone to the primary`)

  console.log(`\nRead replica cost: ${fmtInt(meta.seed.conversations)} conversations, ${opts.connections} connections (analytics: 1), ${opts.warmup} s warmup + ${opts.duration} s, ${cpus().length} cores`)
  console.log('primary CPU = CPU seconds of the primary\'s postgres processes during the measured run (÷ wall seconds: cores busy)\n')
  for (const r of rows) console.log(fmtRow(r))
  console.log('\nmean over the pairs: with replica ÷ primary only')
  for (const id of new Set(rows.map((r) => r.id))) {
    const of = (mode: Row['mode']) => rows.filter((r) => r.id === id && r.mode === mode && r.status === 'ok')
    const mean = (xs: Row[], f: (r: Row) => number) => xs.reduce((a, r) => a + f(r), 0) / xs.length
    const [p, w] = [of('primary only'), of('with replica')]
    if (!p.length || !w.length) continue
    const rate = (r: Row) => (r.id === 'analytics-csv' ? 1 / r.seconds : r.rps!)
    const cpuPerReq = (r: Row) => r.primaryCpuS / (r.id === 'analytics-csv' ? 1 : r.rps! * r.seconds)
    console.log(
      `${id.padEnd(28)} req/s ${(mean(w, rate) / mean(p, rate)).toFixed(2)}   p50 ${(mean(w, (r) => r.p50 ?? r.seconds * 1000) / mean(p, (r) => r.p50 ?? r.seconds * 1000)).toFixed(2)}   ` +
        `primary CPU s ${mean(p, (r) => r.primaryCpuS).toFixed(2)} -> ${mean(w, (r) => r.primaryCpuS).toFixed(2)}   primary CPU ms/request ${(mean(p, cpuPerReq) * 1000).toFixed(2)} -> ${(mean(w, cpuPerReq) * 1000).toFixed(2)}`,
    )
  }
  const file = join(RESULTS_DIR, `replica-cost-${stamp}-${meta.seed.conversations}.json`)
  writeFileSync(file, JSON.stringify({ options: { ...opts, scenarios: [...opts.scenarios] }, rows }, null, 2) + '\n')
  step(`results written to ${file}`)
}

function fmtRow(r: Row): string {
  const perf = r.status !== 'ok' ? r.note : r.id === 'analytics-csv' ? `once in ${r.seconds.toFixed(1)} s` : `${fmtInt(r.rps!)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`
  return (
    `pair ${r.pair} ${r.mode.padEnd(12)} ${r.id.padEnd(28)} ${perf}; primary CPU ${r.primaryCpuS.toFixed(2)} s (${(r.primaryCpuS / r.seconds).toFixed(2)} cores), ` +
    `replica ${r.replicaCpuS.toFixed(2)} s; load ${r.load1.toFixed(2)}${r.non2xx || r.errors ? `; non-2xx ${r.non2xx}, errors ${r.errors}` : ''}`
  )
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err) => {
    if (interrupted) return
    console.error(`replica-cost failed: ${(err as Error).stack ?? err}`)
    await cleanup()
    process.exit(1)
  })
