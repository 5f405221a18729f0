import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { testEnv } from '../helper.js'
import { createTestDatabase, databaseUrl } from '../setup/database.js'
import { freePort, waitFor } from '../support/processes.js'

// What a development start offers, through real `npm start` processes: no published secret is
// accepted, and the server is not on the network unless production (or HOST) says so.
const root = new URL('../..', import.meta.url).pathname
const serverArgs = ['--import', 'tsx', 'src/server.ts']
// Several server starts (tsx compiles at each) on a shared 2-core machine.
t.setTimeout(240_000)

function runServerSync(env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, serverArgs, { cwd: root, env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 30_000 })
}

function get(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method: 'GET' }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

// What .env.example shipped before it held no secrets (`git log -p .env.example`): public values.
const EXAMPLE = { AUTH_JWT_SECRET: 'dev-only-member-secret-change-me', VISITOR_SESSION_SECRET: 'dev-only-visitor-secret-change-me' }

t.test('published example secrets are refused at start: one line naming the variable, never the value', async (t) => {
  const prod = testEnv({ NODE_ENV: 'production', DATABASE_URL: databaseUrl('parley_never_created'), REDIS_URL: 'redis://127.0.0.1:1' })
  const cases: [string, Record<string, string>][] = [
    ['AUTH_JWT_SECRET', { AUTH_JWT_SECRET: EXAMPLE.AUTH_JWT_SECRET }],
    ['VISITOR_SESSION_SECRET', { VISITOR_SESSION_SECRET: EXAMPLE.VISITOR_SESSION_SECRET }],
    // Any secret variable, with either value.
    ['CURSOR_SECRET', { CURSOR_SECRET: EXAMPLE.AUTH_JWT_SECRET }],
  ]
  for (const [name, env] of cases) {
    const r = runServerSync({ ...prod, ...env })
    t.equal(r.status, 1, `${name}: refused`)
    const lines = r.stderr.trim().split('\n')
    t.equal(lines.length, 1, 'one line')
    t.match(lines[0], new RegExp(`^Invalid configuration: ${name} is a published example value`), 'names the variable')
    t.notOk(r.stderr.includes(Object.values(env)[0]) || r.stdout.includes(Object.values(env)[0]), 'never the value')
  }

  // The way it happens: an old .env.example copied to .env, `npm start` in development. Its
  // secrets are not "missing", so nothing is generated over them: refused as well.
  const dir = mkdtempSync(join(tmpdir(), 'parley-dotenv-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  // Its DATABASE_URL points nowhere: a start that got past the configuration stops at once anyway.
  writeFileSync(join(dir, '.env'), `NODE_ENV=development\nDATABASE_URL=postgres://127.0.0.1:1/parley\nAUTH_JWT_SECRET=${EXAMPLE.AUTH_JWT_SECRET}\nVISITOR_SESSION_SECRET=${EXAMPLE.VISITOR_SESSION_SECRET}\n`)
  const dev = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/server.ts')], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    encoding: 'utf8',
    timeout: 20_000,
  })
  t.equal(dev.status, 1, 'development with the old .env: refused')
  t.match(dev.stderr.trim(), /^Invalid configuration: (AUTH_JWT_SECRET|VISITOR_SESSION_SECRET) is a published example value/)
  t.notOk(dev.stderr.includes('dev-only-'), 'never the value')
})

t.test('the default listen address: 127.0.0.1 outside production, 0.0.0.0 in production', async (t) => {
  const db = await createTestDatabase()
  t.teardown(db.drop)
  // 127.0.0.2 is this machine too (all of 127/8 is loopback), but only a server bound to every
  // address (0.0.0.0) answers there: it stands in for the machine's network address.
  for (const [nodeEnv, reachable] of [
    ['development', false],
    ['production', true],
  ] as const) {
    const port = await freePort()
    const env = testEnv({ NODE_ENV: nodeEnv, DATABASE_URL: db.url, PORT: String(port), HOST: undefined, PARLEY_DIR: join(tmpdir(), 'parley-host-test'), JOBS_WORKER: 'false' })
    const child = spawn(process.execPath, serverArgs, { cwd: root, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stderr.on('data', (c) => (out += c))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    t.teardown(() => child.kill('SIGKILL'))
    await waitFor(async () => (await get(port, '/health', '127.0.0.1')).status === 200, 30_000, 200).catch((err: Error) => {
      throw new Error(`${err.message}\n${out}`)
    })
    const other = await get(port, '/health', '127.0.0.2').then(
      (r) => r.status,
      (err: NodeJS.ErrnoException) => err.code,
    )
    t.equal(other, reachable ? 200 : 'ECONNREFUSED', `NODE_ENV=${nodeEnv}: ${reachable ? 'every address' : 'loopback 127.0.0.1 only'}`)
    child.kill('SIGTERM')
    t.equal(await exited, 0)
  }
})
