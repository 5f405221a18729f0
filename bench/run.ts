/**
 * Parley's benchmark harness: seeds a dedicated database, starts the production build of the
 * API and two ceiling servers, measures each scenario with autocannon and judges the targets as
 * ratios measured in the same run. See bench/README.md.
 *
 *   npm run bench -- --conversations 1000000
 */
import { spawnSync } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { runMigrations } from '../src/db/migrate.js'
import { cleanup, installSignalHandlers, interrupted, onCleanup } from './lib/cleanup.js'
import { connect, createDatabase, databaseExists, dropDatabase, withDatabase, BENCH_DB_PATTERN, type Pool } from './lib/db.js'
import { measure, probe, type LoadOptions, type Measurement, type Scenario } from './lib/load.js'
import { fmtDuration, fmtInt, step } from './lib/progress.js'
import { scenarioTable, target, targetTable, type Target } from './lib/report.js'
import { seed, type SeedResult, type SeedWorkspace } from './lib/seed.js'
import { memoryOf, startChild, type Child } from './lib/server.js'
import { COMMON_WORD, FREQUENT_WORD, RARE_TOKEN } from './lib/words.js'
import { resolveList, sectionQuery } from '../src/conversations/lists.js'
import { listPageOne, listSectionAfter } from './list-sql.js'
import { memberToken } from '../test/helper.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const RESULTS = join(ROOT, 'bench', 'results')

const ALL_SCENARIOS = [
  'health',
  'ceiling-framework',
  'ceiling-sql',
  'list-page1',
  'list-deep',
  'unread-large',
  'unread-small',
  'search-rare',
  'search-common',
  'search-frequent',
  'search-rare-1c',
  'get-conversation',
  'post-message',
  'webhook-a',
  'ceiling-sql-generic',
] as const
/** Diagnostics, run only when named in --scenarios. */
const OPT_IN = new Set(['ceiling-sql-generic'])

const HELP = `Usage: npm run bench -- [options]
  --conversations N   conversations to seed (default 20000; the target run uses 1000000)
  --duration S        measured seconds per scenario (default 10)
  --warmup S          warmup seconds per scenario, discarded (default 3)
  --connections N     concurrent connections (default 50)
  --scenarios a,b     only these scenarios (default all but the diagnostic ceiling-sql-generic):
                      ${ALL_SCENARIOS.join(', ')}
  --seed N            data set seed (default 42): same seed, same data
  --keep-db           keep the seeded database (its name is printed) for --db
  --db NAME           reuse a database seeded by an earlier --keep-db run (skips seeding; kept)
  --cpu-prof          run the API with --cpu-prof; profiles land in bench/results/
  --no-build          use the existing dist/ instead of running npm run build
  --api-db-params Q   experiment: extra Postgres session settings for the API's pool, as URL
                      query parameters (e.g. plan_cache_mode=force_generic_plan)
  --database-url URL  server to create the database on (default $BENCH_DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --redis-url URL     (default $REDIS_URL or redis://127.0.0.1:6379)`

interface Meta {
  seed: SeedResult
  conversations: number
}

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
  const scenarios = values.scenarios ? values.scenarios.split(',').map((s) => s.trim()) : ALL_SCENARIOS.filter((s) => !OPT_IN.has(s))
  for (const s of scenarios) if (!(ALL_SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}`)
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

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now()
  const value = await fn()
  return { value, ms: performance.now() - t0 }
}

/**
 * Follows GET /conversations cursors `depth` rows deep (pages of `limit`), as a client would;
 * returns the cursor of the next page, or undefined when the list is shorter.
 */
async function walkCursor(api: string, headers: Record<string, string>, depth: number, limit?: number) {
  let cursor: string | undefined
  let rows = 0
  const t0 = Date.now()
  while (rows < depth) {
    const q = new URLSearchParams()
    if (limit) q.set('limit', String(limit))
    if (cursor) q.set('cursor', cursor)
    const res = await fetch(`${api}/conversations?${q}`, { headers })
    if (!res.ok) throw new Error(`walking the list: ${res.status} ${await res.text()}`)
    const page = (await res.json()) as { data: unknown[]; nextCursor: string | null }
    rows += page.data.length
    if (!page.nextCursor) return { cursor: undefined, rows, secs: (Date.now() - t0) / 1000 }
    cursor = page.nextCursor
  }
  return { cursor, rows, secs: (Date.now() - t0) / 1000 }
}

async function main() {
  const opts = parse()
  const runStarted = Date.now()
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15)
  const dbName = opts.db ?? `parley_bench_${stamp.toLowerCase()}_${process.pid}`
  const dbUrl = withDatabase(opts.adminUrl, dbName)
  const load: LoadOptions = { connections: opts.connections, duration: opts.duration, warmup: opts.warmup }
  installSignalHandlers()
  mkdirSync(RESULTS, { recursive: true })

  // 1. The production build first: a broken build should fail before minutes of seeding.
  if (opts.build) {
    step('building the API (npm run build, into a clean dist/)')
    // A stale compiled route file (renamed or deleted since) would still be autoloaded.
    rmSync(join(ROOT, 'dist'), { recursive: true, force: true })
    const b = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', process.stderr, process.stderr] })
    if (b.status !== 0) throw new Error('npm run build failed')
  }

  // 2. The dedicated database: created, migrated, seeded; dropped at the end unless kept.
  let meta: Meta
  let sql: Pool
  const timings: Record<string, number> = {}
  if (opts.db) {
    if (!(await databaseExists(opts.adminUrl, dbName))) throw new Error(`database ${dbName} does not exist`)
    sql = connect(dbUrl, 8)
    onCleanup('close harness pool', () => sql.end({ timeout: 5 }))
    const [row] = await sql<{ data: Meta }[]>`SELECT data FROM bench_meta LIMIT 1`
    meta = row.data
    step(`reusing ${dbName} (${fmtInt(meta.seed.conversations)} conversations, seeded earlier)`)
  } else {
    step(`creating database ${dbName}`)
    await createDatabase(opts.adminUrl, dbName)
    if (!opts.keepDb) onCleanup(`drop database ${dbName}`, () => dropDatabase(opts.adminUrl, dbName).then(() => step(`dropped ${dbName}`)))
    else onCleanup('report kept database', () => step(`kept database ${dbName} (reuse: --db ${dbName}; drop: DROP DATABASE ${dbName})`))
    let t0 = Date.now()
    await runMigrations(dbUrl, { createDatabase: false })
    timings.migrate = (Date.now() - t0) / 1000
    sql = connect(dbUrl, 8)
    onCleanup('close harness pool', () => sql.end({ timeout: 5 }))
    t0 = Date.now()
    const seeded = await seed(sql, { conversations: opts.conversations, seed: opts.seed })
    timings.seed = (Date.now() - t0) / 1000
    step(`seeded in ${fmtDuration(timings.seed)} (${fmtInt(seeded.conversations)} conversations, ${fmtInt(seeded.messages)} messages)`)
    meta = { seed: seeded, conversations: opts.conversations }
    await sql`CREATE TABLE bench_meta (data jsonb NOT NULL)`
    await sql`INSERT INTO bench_meta (data) VALUES (${JSON.stringify(meta)}::jsonb)`
  }
  const { largest, small } = meta.seed

  // 3. The API, production build, as a child process on the bench database.
  const secrets = {
    AUTH_JWT_SECRET: `bench-jwt-${randomBytes(16).toString('hex')}`,
    VISITOR_SESSION_SECRET: `bench-visitor-${randomBytes(16).toString('hex')}`,
    CURSOR_SECRET: `bench-cursor-${randomBytes(16).toString('hex')}`,
    PROVIDER_A_WEBHOOK_SECRET: `whsec_bench_${randomBytes(16).toString('hex')}`,
  }
  const redisPrefix = `bench:${dbName}:${process.pid}:`
  const apiPort = await freePort()
  const profDir = join(RESULTS, `cpu-${stamp}`)
  const apiEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    PORT: String(apiPort),
    HOST: '127.0.0.1',
    DATABASE_URL: opts.apiDbParams ? `${dbUrl}?${opts.apiDbParams}` : dbUrl,
    REDIS_URL: opts.redisUrl,
    REDIS_PREFIX: redisPrefix,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    ...secrets,
  }
  step(`starting the API (node dist/src/server.js) on :${apiPort}${opts.cpuProf ? `, profiling into ${profDir}` : ''}`)
  const api = await startChild({
    name: 'API',
    args: [...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), join(ROOT, 'dist/src/server.js')],
    env: apiEnv,
    port: apiPort,
    readyPath: '/health',
  })
  onCleanup('stop API', () => api.stop())
  onCleanup('delete Redis keys', async () => {
    const redis = new Redis(opts.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await redis.connect()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000)
      if (keys.length) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    redis.disconnect()
  })

  const headersFor = async (ws: SeedWorkspace) => ({
    authorization: `Bearer ${await memberToken(ws.owner.userId, { secret: secrets.AUTH_JWT_SECRET, name: 'Bench Owner', expiresIn: '6h' })}`,
    'x-workspace-id': ws.id,
  })
  const hLarge = await headersFor(largest)
  const hSmall = await headersFor(small)

  // The seeded counters must agree with the application's own recount of the same data.
  let seedCheck: { reconcile: string; before?: unknown; after?: unknown } = { reconcile: 'n/a (route missing)' }
  {
    const res = await fetch(`${api.url}/conversations/counts/reconcile`, { headers: hSmall })
    const body = (await res.json().catch(() => ({}))) as { corrected?: boolean; code?: string; message?: string }
    if (res.status === 200) {
      seedCheck = { reconcile: body.corrected === false ? 'ok (corrected: false)' : 'DRIFT (corrected: true)', ...body }
      step(`seed check, reconcile on the small workspace: ${seedCheck.reconcile}`)
    } else if (!(res.status === 404 && body.code === 'NOT_FOUND')) {
      seedCheck = { reconcile: `error ${res.status} ${body.code ?? ''}` }
    }
  }

  // Conversations the by-id scenarios pick from at random: OPEN, not deleted, largest workspace.
  const ids = (
    await sql<{ id: string }[]>`
      SELECT id FROM conversations
      WHERE workspace_id = ${largest.id} AND deleted_at IS NULL AND status = 'OPEN'
      ORDER BY random() LIMIT 2000`
  ).map((r) => r.id)
  const [{ open }] = await sql<{ open: number }[]>`
    SELECT count(*)::int AS open FROM conversations WHERE workspace_id = ${largest.id} AND deleted_at IS NULL AND status = 'OPEN'`
  const pickId = () => ids[Math.floor(Math.random() * ids.length)]

  // The deep page: the cursor after 100,000 rows of the largest workspace (less on small runs).
  const depth = Math.min(100_000, Math.floor((open * 0.9) / 100) * 100)
  let deepCursor: string | undefined
  let deepNote: string | undefined
  const listProbe = await probe(api.url, { id: 'x', label: 'x', kind: 'read', method: 'GET', path: '/conversations', headers: hLarge })
  if (listProbe.status === 200 && depth > 0) {
    step(`walking ${fmtInt(depth)} rows of GET /conversations for the deep-page cursor`)
    const walk = await walkCursor(api.url, hLarge, depth, 100)
    deepCursor = walk.cursor
    if (deepCursor) deepNote = `after ${fmtInt(walk.rows)} rows`
    const check = deepCursor
      ? await fetch(`${api.url}/conversations?cursor=${encodeURIComponent(deepCursor)}`, { headers: hLarge })
      : undefined
    if (check && check.status === 400) {
      // The cursor is bound to its page size: walk again at the default size.
      step('cursor is bound to limit; walking again at the default page size')
      deepCursor = (await walkCursor(api.url, hLarge, depth)).cursor
    }
    step(`deep cursor ready (${walk.secs.toFixed(1)} s walk)`)
  }

  // 4. Scenarios.
  const runTag = `${stamp}_${process.pid}`
  const billingWorkspaces = [...meta.seed.workspaces.map((w) => w.id), ...(meta.seed.billingOnlyWorkspaces ?? [])]
  let seq = 0
  const scenarios: Scenario[] = [
    { id: 'health', label: 'GET /health', kind: 'read', method: 'GET', path: '/health' },
    { id: 'ceiling-framework', label: 'ceiling: bare Fastify, constant list page', kind: 'ceiling', method: 'GET', path: '/list' },
    { id: 'ceiling-sql', label: 'ceiling: list SQL via postgres.js, no auth', kind: 'ceiling', method: 'GET', path: '/list' },
    {
      id: 'ceiling-sql-generic',
      label: 'ceiling: list SQL, plan_cache_mode=force_generic_plan',
      kind: 'ceiling',
      method: 'GET',
      path: '/list',
      note: 'diagnostic: what planning costs',
    },
    {
      // The same ceiling again, after the list runs: one run can be disturbed by other work on
      // the machine, which only ever lowers a ceiling, so the target uses the higher of the two.
      id: 'ceiling-sql-again',
      label: 'ceiling: list SQL via postgres.js, no auth (again)',
      kind: 'ceiling',
      method: 'GET',
      path: '/list',
    },
    { id: 'list-page1', label: 'GET /conversations page 1', kind: 'read', method: 'GET', path: '/conversations', headers: hLarge },
    {
      id: 'list-deep',
      label: `GET /conversations deep page`,
      kind: 'read',
      method: 'GET',
      path: deepCursor ? `/conversations?cursor=${encodeURIComponent(deepCursor)}` : '/conversations?cursor=none',
      headers: hLarge,
      note: deepNote,
    },
    {
      id: 'unread-large',
      label: `GET /conversations/unread-count (${fmtInt(largest.size)} conv.)`,
      kind: 'read',
      method: 'GET',
      path: '/conversations/unread-count',
      headers: hLarge,
      fixedWord: true,
    },
    {
      id: 'unread-small',
      label: `GET /conversations/unread-count (${fmtInt(small.size)} conv.)`,
      kind: 'read',
      method: 'GET',
      path: '/conversations/unread-count',
      headers: hSmall,
      fixedWord: true,
    },
    {
      id: 'search-rare',
      label: `GET /conversations/search rare word`,
      kind: 'read',
      method: 'GET',
      path: `/conversations/search?q=${RARE_TOKEN}`,
      headers: hLarge,
      fixedWord: true,
    },
    {
      id: 'search-common',
      label: `GET /conversations/search common word`,
      kind: 'read',
      method: 'GET',
      path: `/conversations/search?q=${COMMON_WORD}`,
      headers: hLarge,
      fixedWord: true,
    },
    {
      id: 'search-frequent',
      label: `GET /conversations/search frequent word`,
      kind: 'read',
      method: 'GET',
      path: `/conversations/search?q=${FREQUENT_WORD}`,
      headers: hLarge,
      fixedWord: true,
    },
    {
      id: 'search-rare-1c',
      label: `GET /conversations/search rare word, 1 connection`,
      kind: 'read',
      method: 'GET',
      path: `/conversations/search?q=${RARE_TOKEN}`,
      headers: hLarge,
      fixedWord: true,
      connections: 1,
      note: 'single client: latency without queueing',
    },
    {
      id: 'get-conversation',
      label: 'GET /conversations/:id',
      kind: 'read',
      method: 'GET',
      path: `/conversations/${ids[0]}`,
      headers: hLarge,
      vary: (req) => ({ ...req, path: `/conversations/${pickId()}` }),
    },
    {
      id: 'post-message',
      label: 'POST /conversations/:id/messages',
      kind: 'write',
      method: 'POST',
      path: `/conversations/${ids[0]}/messages`,
      headers: { ...hLarge, 'content-type': 'application/json' },
      vary: (req) => ({
        ...req,
        path: `/conversations/${pickId()}/messages`,
        body: JSON.stringify({
          // No word of the search scenarios: posted messages must not change what they find.
          body: 'Thanks for waiting, I have checked with the team and it is on its way.',
          clientMessageId: `bench-${runTag}-${++seq}`,
        }),
      }),
    },
    {
      id: 'webhook-a',
      label: 'POST /billing/webhooks/provider-a',
      kind: 'write',
      method: 'POST',
      path: '/billing/webhooks/provider-a',
      headers: { 'content-type': 'application/json' },
      vary: (req) => {
        const n = ++seq
        const t = Math.floor(Date.now() / 1000)
        // Events for random customers, as a provider sends them (50 concurrent events for one
        // workspace would all queue on its subscription row).
        const ws = billingWorkspaces[Math.floor(Math.random() * billingWorkspaces.length)]
        const body = JSON.stringify({
          id: `evt_bench_${runTag}_${n}`,
          type: 'invoice.paid',
          created: t,
          data: {
            object: {
              id: `in_bench_${runTag}_${n}`,
              object: 'invoice',
              amount_paid: 1999,
              currency: 'usd',
              customer: 'cus_bench',
              subscription: `sub_bench_${ws.slice(0, 8)}`,
              metadata: { workspaceId: ws },
            },
          },
        })
        const sig = createHmac('sha256', secrets.PROVIDER_A_WEBHOOK_SECRET).update(`${t}.${body}`).digest('hex')
        return { ...req, body, headers: { ...req.headers, 'provider-a-signature': `t=${t},v1=${sig}` } }
      },
    },
  ]

  // The rare-word search against ILIKE, measured once in SQL before any write scenario adds
  // messages; document frequencies of both search words for context.
  const sqlChecks = opts.scenarios.has('search-rare') ? await searchVsIlike(sql, largest.id) : undefined

  const results: Measurement[] = []
  const order = (id: string) => (id === 'ceiling-sql-again' ? scenarios.findIndex((x) => x.id === 'list-deep') + 0.5 : scenarios.findIndex((x) => x.id === id))
  for (const s of [...scenarios].sort((a, b) => order(a.id) - order(b.id))) {
    const wanted = s.id === 'ceiling-sql-again' ? opts.scenarios.has('ceiling-sql') && opts.scenarios.has('list-page1') : opts.scenarios.has(s.id)
    if (!wanted) continue
    step(`measuring ${s.id}: ${opts.warmup} s warmup + ${opts.duration} s at ${opts.connections} connections`)
    let m: Measurement
    if (s.id === 'list-deep' && !deepCursor) {
      m = { id: s.id, label: s.label, kind: s.kind, status: 'n/a', note: listProbe.status === 404 ? 'n/a (route missing)' : 'n/a (no deep cursor)' }
    } else if (s.kind === 'ceiling') {
      m = await measureCeiling(s, { listBody: listProbe.status === 200 ? listProbe.body : undefined, sql, dbUrl, workspaceId: largest.id, load })
    } else {
      m = await measure(api.url, api.pid, s, load)
    }
    results.push(m)
    const summary = m.status === 'ok' ? `${fmtInt(m.rps!)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms` : m.note
    step(`  ${s.id}: ${summary}`)
    if (api.process.exitCode !== null) throw new Error(`the API exited during ${s.id}:\n${api.output()}`)
  }
  const apiMem = memoryOf(api.pid)


  // EXPLAIN (ANALYZE, BUFFERS) of the queries behind the targets, for the JSON file.
  const explain = await explainQueries(sql, largest.id, deepCursor).catch((err: Error) => ({ error: err.message }))

  // 6. Targets.
  const by = (id: string) => results.find((r) => r.id === id && r.status === 'ok')
  const ratio = (a?: number, b?: number) => (a !== undefined && b ? a / b : undefined)
  const page1 = by('list-page1')
  const sqlCeilings = [by('ceiling-sql')?.rps, by('ceiling-sql-again')?.rps].filter((n): n is number => n !== undefined)
  const sqlCeiling = sqlCeilings.length ? Math.max(...sqlCeilings) : undefined
  const reads = results.filter((r) => r.kind === 'read' && r.status === 'ok')
  const worstRead = reads.reduce<Measurement | undefined>((w, r) => (!w || (r.p99 ?? 0) > (w.p99 ?? 0) ? r : w), undefined)
  const searchRare = by('search-rare')
  const rare1c = by('search-rare-1c')
  const targets: Target[] = [
    target(
      'list page 1 req/s ÷ raw-SQL ceiling req/s',
      ratio(page1?.rps, sqlCeiling),
      '>=',
      0.6,
      '',
      sqlCeiling ? `ceiling: higher of two runs (${[by('ceiling-sql')?.rps, by('ceiling-sql-again')?.rps].filter(Boolean).map((n) => fmtInt(n!)).join(' / ')} req/s)` : undefined,
    ),
    target('deep page p50 ÷ page 1 p50', ratio(by('list-deep')?.p50, page1?.p50), '<=', 1.3, '', deepNote),
    target(
      `unread-count p50 ${fmtInt(largest.size)} conv. ÷ ${fmtInt(small.size)} conv.`,
      ratio(by('unread-large')?.p50, by('unread-small')?.p50),
      '<=',
      1.3,
    ),
    target(
      `search (rare word) p50 at ${opts.connections} connections`,
      searchRare?.p50,
      '<',
      50,
      ' ms',
      rare1c ? `1 connection: p50 ${rare1c.p50} ms, p99 ${rare1c.p99} ms` : undefined,
    ),
    // Like with like: the ILIKE query runs once with nothing else in flight, so it is compared
    // with the endpoint's single-client p50 (the whole HTTP request, more work than the SQL).
    target(
      `ILIKE query time ÷ search (rare word) p50 at ${rare1c ? '1 connection' : `${opts.connections} connections`}`,
      ratio(sqlChecks?.ilikeMs, (rare1c ?? searchRare)?.p50),
      '>=',
      20,
      '×',
      sqlChecks
        ? `ILIKE ${fmtInt(sqlChecks.ilikeMs)} ms once; same query with the FTS index ${sqlChecks.ftsMs.toFixed(1)} ms` +
            (searchRare?.p50 ? `; ÷ p50 at ${opts.connections} conn.: ${(sqlChecks.ilikeMs / searchRare.p50).toPrecision(2)}×` : '')
        : undefined,
    ),
    target(
      'p99 of every read scenario',
      worstRead?.p99,
      '<',
      100,
      ' ms',
      worstRead
        ? `worst: ${worstRead.id}; over 100 ms: ${reads.filter((r) => (r.p99 ?? 0) >= 100).map((r) => r.id).join(', ') || 'none'}`
        : undefined,
    ),
    target('peak RSS of the API (VmHWM)', apiMem?.peak, '<', 300, ' MiB'),
  ]

  const totalSecs = (Date.now() - runStarted) / 1000
  const header = [
    `Parley bench: ${fmtInt(meta.seed.conversations)} conversations, ${fmtInt(meta.seed.messages)} messages, ` +
      `${meta.seed.workspaces.length} workspaces (largest ${fmtInt(largest.size)}, small ${fmtInt(small.size)})`,
    `${opts.connections} connections, pipelining 1, ${opts.warmup} s warmup + ${opts.duration} s per scenario; ` +
      `seeding ${timings.seed !== undefined ? fmtDuration(timings.seed) : 'reused'}; total ${fmtDuration(totalSecs)}`,
    `seed check (reconcile on the small workspace): ${seedCheck.reconcile}` +
      (sqlChecks
        ? `; messages with the search words in the largest workspace: rare ${fmtInt(sqlChecks.rareWordMessages)}, ` +
          `common ${fmtInt(sqlChecks.commonWordMessages)}, frequent ${fmtInt(sqlChecks.frequentWordMessages)} of ${fmtInt(sqlChecks.messagesInWorkspace)}`
        : ''),
  ].join('\n')
  const out = [header, '', scenarioTable(results), '', targetTable(targets)].join('\n')
  console.log('\n' + out + '\n')

  const file = join(RESULTS, `bench-${stamp}-${meta.seed.conversations}.json`)
  writeFileSync(
    file,
    JSON.stringify(
      {
        startedAt: new Date(runStarted).toISOString(),
        machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
        options: { ...opts, scenarios: [...opts.scenarios] },
        database: dbName,
        data: {
          conversations: meta.seed.conversations,
          messages: meta.seed.messages,
          guests: meta.seed.guests,
          workspaces: meta.seed.workspaces.map((w) => ({ id: w.id, name: w.name, conversations: w.size })),
          rareToken: RARE_TOKEN,
          commonWord: COMMON_WORD,
          frequentWord: FREQUENT_WORD,
          rareTokenMessages: meta.seed.rareTokenMessages,
          openInLargest: open,
          deepPageDepth: depth,
        },
        timings: { ...timings, seedSteps: meta.seed.timings, totalSecs },
        scenarios: results,
        apiMemoryMiB: apiMem,
        seedCheck,
        sqlChecks,
        targets,
        explain,
      },
      null,
      2,
    ) + '\n',
  )
  step(`results written to ${file}`)
}

/** Starts a ceiling server (framework or SQL), measures it, stops it. */
async function measureCeiling(
  s: Scenario,
  ctx: { listBody?: string; sql: Pool; dbUrl: string; workspaceId: string; load: LoadOptions },
): Promise<Measurement> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', PORT: String(port) }
  let note: string | undefined
  if (s.id === 'ceiling-framework') {
    // The API's own page 1 when the route exists; else the same rows through the shared view.
    let body = ctx.listBody
    if (!body) {
      const { toConversationView } = await import('../src/conversations/view.js')
      const rows = await listPageOne(ctx.sql, ctx.workspaceId, 20)
      body = JSON.stringify({ data: rows.slice(0, 20).map((r) => toConversationView(r as never)), nextCursor: 'x'.repeat(160) })
      note = 'page synthesised (list route missing)'
    }
    const file = join(RESULTS, `.ceiling-body-${process.pid}.json`)
    writeFileSync(file, body)
    onCleanup('remove ceiling body file', async () => (await import('node:fs/promises')).rm(file, { force: true }))
    env.BODY_FILE = file
  } else {
    Object.assign(env, { DATABASE_URL: ctx.dbUrl, WORKSPACE_ID: ctx.workspaceId, DATABASE_POOL_MAX: '10' })
    if (s.id === 'ceiling-sql-generic') env.PLAN_CACHE_MODE = 'force_generic_plan'
  }
  const mode = s.id === 'ceiling-framework' ? 'framework' : 'sql'
  const child: Child = await startChild({
    name: `ceiling ${mode}`,
    args: ['--import', 'tsx', join(ROOT, 'bench/ceiling-server.ts'), mode],
    env,
    port,
    readyPath: '/ready',
  })
  try {
    const m = await measure(child.url, child.pid, s, ctx.load)
    return note ? { ...m, note } : m
  } finally {
    await child.stop()
  }
}

/**
 * The rare-word search done two ways, straight in SQL, each the query shape the search endpoint
 * needs (matching conversations of the workspace, not deleted, best first, one page): with the
 * full-text index (tsvector @@ tsquery), and with ILIKE over message bodies (what peers do).
 */
async function searchVsIlike(sql: Pool, workspaceId: string) {
  const fts = () => sql`
    SELECT m.conversation_id, max(ts_rank(m.search, q)) AS rank
    FROM messages m
    CROSS JOIN websearch_to_tsquery('simple', ${RARE_TOKEN}) q
    JOIN conversations c ON c.id = m.conversation_id AND c.deleted_at IS NULL
    WHERE m.workspace_id = ${workspaceId} AND m.search @@ q
    GROUP BY m.conversation_id
    ORDER BY rank DESC, m.conversation_id DESC
    LIMIT 21`
  const ilike = () => sql`
    SELECT m.conversation_id, max(m.created_at) AS last
    FROM messages m
    JOIN conversations c ON c.id = m.conversation_id AND c.deleted_at IS NULL
    WHERE m.workspace_id = ${workspaceId} AND m.body ILIKE ${'%' + RARE_TOKEN + '%'}
    GROUP BY m.conversation_id
    ORDER BY last DESC
    LIMIT 21`
  step('timing the rare-word search in SQL: full-text index vs ILIKE (once)')
  await fts()
  const f = await timed(fts)
  const i = await timed(ilike)
  const freq = async (w: string) =>
    (
      await sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM messages WHERE workspace_id = ${workspaceId} AND search @@ to_tsquery('simple', ${w})`
    )[0].n
  const [{ total }] = await sql<{ total: number }[]>`SELECT count(*)::int AS total FROM messages WHERE workspace_id = ${workspaceId}`
  return {
    ftsMs: f.ms,
    ilikeMs: i.ms,
    ftsRows: f.value.length,
    ilikeRows: i.value.length,
    messagesInWorkspace: total,
    rareWordMessages: await freq(RARE_TOKEN),
    commonWordMessages: await freq(COMMON_WORD),
    frequentWordMessages: await freq(FREQUENT_WORD),
  }
}

/** Plans of the list sections page 1 and the deep page run, and of the full-text search query. */
async function explainQueries(sql: Pool, workspaceId: string, deepCursor: string | undefined): Promise<Record<string, string>> {
  const plan = async (q: ReturnType<typeof listSectionAfter>) =>
    (await sql<{ 'QUERY PLAN': string }[]>`EXPLAIN (ANALYZE, BUFFERS) ${q}`).map((r) => r['QUERY PLAN']).join('\n')
  const out: Record<string, string> = {}
  const r = resolveList('open', { workspaceId, userId: 'bench|explain' }, { limit: 20 })
  out.listPage1Pinned = await plan(sectionQuery(sql, r, { pinned: true }, 21))
  out.listPage1Unpinned = await plan(sectionQuery(sql, r, { pinned: false }, 21))
  if (deepCursor) {
    // The harness reads its own cursor's payload (base64url JSON {p, k}); the tag is not needed here.
    const { k } = JSON.parse(Buffer.from(deepCursor.split('.')[0], 'base64url').toString('utf8')) as { k: [boolean, string, string] }
    out.listDeep = await plan(listSectionAfter(sql, workspaceId, k))
  }
  out.searchRareFts = (
    await sql<{ 'QUERY PLAN': string }[]>`
      EXPLAIN (ANALYZE, BUFFERS)
      SELECT m.conversation_id, ts_rank(m.search, q) AS r
      FROM messages m, websearch_to_tsquery('simple', ${RARE_TOKEN}) q
      WHERE m.workspace_id = ${workspaceId} AND m.search @@ q
      LIMIT 1000`
  )
    .map((x) => x['QUERY PLAN'])
    .join('\n')
  return out
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
