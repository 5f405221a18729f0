import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import postgres from 'postgres'
import t from 'tap'
import { ADMIN_URL, databaseUrl } from '../setup/database.js'
import { testEnv } from '../helper.js'
import { freePort, startRedis, waitFor } from '../support/processes.js'

const root = new URL('../..', import.meta.url).pathname
const serverArgs = ['--import', 'tsx', 'src/server.ts']

function runServerSync(env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, serverArgs, { cwd: root, env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 20_000 })
}

t.test('configuration is validated at start: one clear line naming the variable', async (t) => {
  const base = testEnv({ DATABASE_URL: databaseUrl('parley_never_created') })

  const missing = runServerSync({ ...base, VISITOR_SESSION_SECRET: undefined })
  t.equal(missing.status, 1)
  const lines = missing.stderr.trim().split('\n')
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], /VISITOR_SESSION_SECRET/)

  const malformed = runServerSync({ ...base, PORT: 'eighty' })
  t.equal(malformed.status, 1)
  t.match(malformed.stderr.trim(), /^Invalid configuration: PORT/)

  const badUrl = runServerSync({ ...base, DATABASE_URL: 'mysql://x' })
  t.equal(badUrl.status, 1)
  t.match(badUrl.stderr, /DATABASE_URL/)

  // V8's heap growth (src/heap.ts) is applied at start from a checked number, never a raw flag string.
  for (const value of ['-5', 'lots', '150 --expose-gc']) {
    const heap = runServerSync({ ...base, HEAP_GROWING_PERCENT: value })
    t.equal(heap.status, 1, `HEAP_GROWING_PERCENT=${value} refused`)
    t.match(heap.stderr.trim(), /^Invalid configuration: HEAP_GROWING_PERCENT/)
  }

  const noAuth = runServerSync({ ...base, AUTH_JWT_SECRET: undefined })
  t.equal(noAuth.status, 1)
  t.match(noAuth.stderr, /AUTH_JWKS_URL or AUTH_JWT_SECRET/)
})

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('npm start: creates and migrates the database, serves /health and /docs, exits 0 on SIGTERM after in-flight requests', async (t) => {
  const dbName = `parley_t_start_${randomBytes(4).toString('hex')}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  t.teardown(async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
    await admin.end()
  })
  const redis = await startRedis() // private, so the test can freeze it to hold a request in flight
  t.teardown(redis.stop)
  const port = await freePort()
  const env = testEnv({ DATABASE_URL: databaseUrl(dbName), PORT: String(port), HOST: '127.0.0.1', MIGRATE_ON_START: 'true', REDIS_URL: redis.url, LOG_LEVEL: 'info' })
  const child = spawn(process.execPath, serverArgs, { cwd: root, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c) => (out += c))
  child.stderr.on('data', (c) => (out += c))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => child.kill('SIGKILL'))

  await waitFor(async () => (await get(port, '/health')).status === 200, 30_000, 200)
  const [row] = await admin`SELECT 1 AS ok FROM pg_database WHERE datname = ${dbName}`
  t.ok(row, 'the database was created')
  const check = postgres(databaseUrl(dbName), { max: 1 })
  const [tables] = await check`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('conversations', 'messages', 'members')`
  await check.end()
  t.equal(tables.n, 3, 'migrations were applied')

  const docs = await get(port, '/docs/json')
  t.equal(docs.status, 200)
  t.match(JSON.parse(docs.body), { openapi: /^3\./, paths: { '/health': {} } })
  t.equal((await get(port, '/docs')).status < 400, true, 'the browsable page answers')

  redis.proc.kill('SIGSTOP') // the next probe now takes HEALTH_TIMEOUT_MS to answer
  const inFlight = get(port, '/health')
  await new Promise((r) => setTimeout(r, 200))
  child.kill('SIGTERM')
  const answer = await inFlight
  t.equal(answer.status, 503, 'the in-flight request was answered')
  redis.proc.kill('SIGCONT')
  t.equal(await exited, 0, 'exit code 0')
  t.match(out, /shutting down/)
})
