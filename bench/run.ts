/**
 * Parley's benchmark harness: seeds a dedicated database, starts the production build of the
 * API, lets each area (bench/scenarios/) prepare its scenarios, measures them with autocannon and
 * judges the targets as ratios measured in the same run. See bench/README.md.
 *
 *   npm run bench -- --conversations 1000000
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildApi, prepareDatabase, startApi } from './lib/api.js'
import type { AreaScenario, BenchRun, PreparedArea } from './lib/area.js'
import { cleanup, installSignalHandlers, interrupted } from './lib/cleanup.js'
import { serverSettings, withDatabase, BENCH_DB_PATTERN } from './lib/db.js'
import { measure, type Measurement } from './lib/load.js'
import { RESULTS_DIR as RESULTS } from './lib/paths.js'
import { fmtDuration, fmtInt, step } from './lib/progress.js'
import { scenarioTable, target, targetTable, type Target } from './lib/report.js'
import { memoryOf } from './lib/server.js'
import { areas } from './scenarios/index.js'

const SCENARIOS = areas.flatMap((a) => a.ids)

const HELP = `Usage: npm run bench -- [options]
  --conversations N   conversations to seed (default 20000; the target run uses 1000000)
  --duration S        measured seconds per scenario (default 10)
  --warmup S          warmup seconds per scenario, discarded (default 3)
  --connections N     concurrent connections (default 50)
  --scenarios a,b     only these scenarios (default all but the opt-in diagnostics):
${SCENARIOS.map((s) => `                      ${s.id}${s.optIn ? ' (opt-in)' : ''}`).join('\n')}
  --seed N            data set seed (default 42): same seed, same data
  --keep-db           keep the seeded database (its name is printed) for --db
  --db NAME           reuse a database seeded by an earlier --keep-db run (skips seeding; kept)
  --cpu-prof          run the API with --cpu-prof; profiles land in bench/results/
  --no-build          use the existing dist/ instead of running npm run build
  --api-db-params Q   experiment: extra Postgres session settings for the API's pool, as URL
                      query parameters (e.g. plan_cache_mode=force_generic_plan)
  --database-url URL  server to create the database on (default $BENCH_DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --redis-url URL     (default $REDIS_URL or redis://127.0.0.1:6379)`

type Options = ReturnType<typeof parse>

function parse() {
  const { values } = parseArgs({
    options: {
      conversations: { type: 'string', default: '20000' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '50' },
      scenarios: { type: 'string' },
      seed: { type: 'string', default: '42' },
      'keep-db': { type: 'boolean', default: false },
      db: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
      'api-db-params': { type: 'string' },
      'database-url': { type: 'string' },
      'redis-url': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    console.log(HELP)
    process.exit(0)
  }
  const int = (name: string, v: string, min: number) => {
    const n = Number(v.replaceAll('_', ''))
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`)
    return n
  }
  const scenarios = values.scenarios ? values.scenarios.split(',').map((s) => s.trim()) : SCENARIOS.filter((s) => !s.optIn).map((s) => s.id)
  for (const s of scenarios) if (!SCENARIOS.some((x) => x.id === s)) throw new Error(`unknown scenario ${s}`)
  if (values.db && !BENCH_DB_PATTERN.test(values.db)) throw new Error('--db must name a parley_bench_* database')
  return {
    conversations: int('conversations', values.conversations!, 100),
    duration: int('duration', values.duration!, 1),
    warmup: int('warmup', values.warmup!, 0),
    connections: int('connections', values.connections!, 1),
    scenarios: new Set(scenarios),
    seed: int('seed', values.seed!, 0),
    keepDb: values['keep-db']! || Boolean(values.db),
    db: values.db,
    cpuProf: values['cpu-prof']!,
    build: !values['no-build'],
    apiDbParams: values['api-db-params'],
    adminUrl: values['database-url'] ?? process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: values['redis-url'] ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  }
}

async function main() {
  const opts = parse()
  const runStarted = Date.now()
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15)
  const dbName = opts.db ?? `parley_bench_${stamp.toLowerCase()}_${process.pid}`
  const dbUrl = withDatabase(opts.adminUrl, dbName)
  installSignalHandlers()
  mkdirSync(RESULTS, { recursive: true })

  // 1. The production build first: a broken build should fail before minutes of seeding.
  if (opts.build) buildApi()
  // 2. The dedicated database: created, migrated, seeded; dropped at the end unless kept.
  const { sql, meta, timings } = await prepareDatabase(opts, dbName, dbUrl)
  // The server's memory settings decide what a distinct search costs at 1M (docs/deployment.md,
  // "PostgreSQL settings"): recorded with the run, and said when under the recommendation.
  const server = await serverSettings(sql)
  const memoryMiB = totalmem() / 1048576
  const serverLine =
    `PostgreSQL ${server.version}, shared_buffers ${fmtInt(server.sharedBuffersMiB)} MiB (this machine: ${fmtInt(memoryMiB)} MiB of memory)` +
    (server.sharedBuffersMiB < memoryMiB / 4 ? ' (under the 25% docs/deployment.md recommends)' : '')
  step(serverLine)
  // 3. The API, production build, as a child process on the bench database.
  const run = await startApi(opts, dbName, dbUrl, sql, meta, stamp)
  // 4. Each area prepares its scenarios (setup requests, cursors, SQL checks), then all are measured.
  const prepared: PreparedArea[] = []
  for (const area of areas) prepared.push(await area.prepare(run, (id) => opts.scenarios.has(id)))
  // The preparation rewrote rows (the SLA area's due dates, the list team: hundreds of thousands at
  // 1M), and the development server runs without autovacuum: vacuum as a live database's
  // autovacuum would, so the reads do not walk dead row versions (a kept database run after run
  // grew 1.7M of them in conversations, and its list ceiling halved), then write the dirty buffers.
  step('vacuuming what the preparation wrote (VACUUM (ANALYZE), CHECKPOINT)')
  await run.sql`VACUUM (ANALYZE)`
  await run.sql`CHECKPOINT`
  const results = await measureAll(run, prepared, opts)
  const apiMem = memoryOf(run.api.pid)
  // 5. Targets: each area's, then those about every read and the API's memory.
  const reads = results.filter((r) => r.kind === 'read' && r.status === 'ok')
  const worstRead = reads.reduce<Measurement | undefined>((w, r) => (!w || (r.p99 ?? 0) > (w.p99 ?? 0) ? r : w), undefined)
  const targets: Target[] = [
    ...prepared.flatMap((p) => p.targets?.(results) ?? []),
    target(
      'p99 of every read scenario',
      worstRead?.p99,
      '<',
      100,
      ' ms',
      worstRead ? `worst: ${worstRead.id}; over 100 ms: ${reads.filter((r) => (r.p99 ?? 0) >= 100).map((r) => r.id).join(', ') || 'none'}` : undefined,
    ),
    target('peak RSS of the API (VmHWM)', apiMem?.peak, '<', 300, ' MiB'),
  ]
  // 6. The report: the table on stdout, every number in bench/results/bench-<stamp>-<n>.json.
  const reports = await Promise.all(prepared.map((p) => p.report?.() ?? Promise.resolve(undefined)))
  const totalSecs = (Date.now() - runStarted) / 1000
  const { largest, small } = meta.seed
  const header = [
    `Parley bench: ${fmtInt(meta.seed.conversations)} conversations, ${fmtInt(meta.seed.messages)} messages, ` +
      `${meta.seed.workspaces.length} workspaces (largest ${fmtInt(largest.size)}, small ${fmtInt(small.size)})`,
    `${opts.connections} connections, pipelining 1, ${opts.warmup} s warmup + ${opts.duration} s per scenario; ` +
      `seeding ${timings.seed !== undefined ? fmtDuration(timings.seed) : 'reused'}; total ${fmtDuration(totalSecs)}`,
    serverLine,
    ...prepared.flatMap((p) => p.summary ?? []),
  ].join('\n')
  console.log('\n' + [header, '', scenarioTable(results), '', targetTable(targets)].join('\n') + '\n')

  const file = join(RESULTS, `bench-${stamp}-${meta.seed.conversations}.json`)
  const report = {
    startedAt: new Date(runStarted).toISOString(),
    machine: { cpus: cpus().length, memoryMiB: Math.round(memoryMiB), node: process.version },
    postgres: server,
    options: { ...opts, scenarios: [...opts.scenarios] },
    database: dbName,
    data: {
      conversations: meta.seed.conversations,
      messages: meta.seed.messages,
      guests: meta.seed.guests,
      workspaces: meta.seed.workspaces.map((w) => ({ id: w.id, name: w.name, conversations: w.size })),
    },
    timings: { ...timings, seedSteps: meta.seed.timings, totalSecs },
    scenarios: results,
    apiMemoryMiB: apiMem,
    targets,
    areas: Object.fromEntries(areas.map((a, i) => [a.name, reports[i]?.data]).filter(([, d]) => d !== undefined)),
    explain: Object.assign({}, ...reports.map((r) => r?.explain ?? {})),
  }
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n')
  step(`results written to ${file}`)
}

/**
 * Measures every wanted scenario in area order; a scenario naming `after` runs right after that
 * one. A scenario whose id is not selectable (ceiling-sql-again) runs whenever its area returns it.
 */
async function measureAll(run: BenchRun, prepared: PreparedArea[], opts: Options): Promise<Measurement[]> {
  const all = prepared.flatMap((p) => p.scenarios)
  const ids = new Set(all.map((s) => s.id))
  const ordered: AreaScenario[] = []
  // A follower may have its own follower (ceiling, media, ceiling again, media again).
  const withFollowers = (s: AreaScenario): AreaScenario[] => [s, ...all.filter((x) => x.after === s.id).flatMap(withFollowers)]
  for (const s of all) if (!s.after || !ids.has(s.after)) ordered.push(...withFollowers(s))
  const selectable = new Set(SCENARIOS.map((s) => s.id))
  const wanted = (s: AreaScenario) => !selectable.has(s.id) || opts.scenarios.has(s.id)
  const results: Measurement[] = []
  for (const s of ordered.filter(wanted)) {
    step(`measuring ${s.id}: ${opts.warmup} s warmup + ${opts.duration} s at ${s.connections ?? opts.connections} connections`)
    const m: Measurement = s.unavailable
      ? { id: s.id, label: s.label, kind: s.kind, status: 'n/a', note: s.unavailable }
      : s.measure
        ? await s.measure()
        : await measure(run.api.url, run.api.pid, s, run.load)
    results.push(m)
    step(`  ${s.id}: ${m.status === 'ok' ? `${fmtInt(m.rps!)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms` : m.note}`)
    if (run.api.process.exitCode !== null) throw new Error(`the API exited during ${s.id}:\n${run.api.output()}`)
  }
  return results
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err) => {
    if (interrupted) return // the signal handler cleans up and exits
    console.error(`bench failed: ${(err as Error).stack ?? err}`)
    await cleanup()
    process.exit(1)
  })
