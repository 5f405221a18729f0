import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import type { TestContext } from '../helper.js'

/**
 * Real engines started by the tests on 127.0.0.1 (docs/scaling.md): PgBouncer, a PostgreSQL 15
 * primary with a streaming replica, a Redis Cluster. Opt-in locally (PARLEY_ENGINE_TESTS=1),
 * always on in .ci/run; `engineSkip` says why a file did not run.
 */
export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'

export function engineSkip(binaries: string[]): string | false {
  if (process.env.PARLEY_ENGINE_TESTS !== '1') return 'engine tests are opt-in locally: PARLEY_ENGINE_TESTS=1 runs them (.ci/run always does)'
  const missing = binaries.filter((b) => !(b.startsWith('/') ? existsSync(b) : spawnSync('sh', ['-c', `command -v ${b}`]).status === 0))
  return missing.length ? `missing engine binaries: ${missing.join(', ')}` : false
}

import { freePort } from '../support/processes.js'

export { freePort }

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`)
    await sleep(everyMs)
  }
}

/** A temp dir the `postgres` OS user can use when we run as root (PostgreSQL refuses root). */
function engineDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  chmodSync(dir, 0o777)
  return dir
}

const asRoot = process.getuid?.() === 0
/** argv run as the postgres OS user when this process is root. */
const pgUser = (argv: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', ...argv]] : [argv[0]!, argv.slice(1)])

function run(argv: string[]): void {
  const [cmd, args] = pgUser(argv)
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr || r.stdout}`)
}

/** A child process killed at teardown (SIGKILL if SIGTERM is not enough). */
function child(t: TestContext, argv: string[], asPostgres = false): ChildProcess {
  const [cmd, args] = asPostgres ? pgUser(argv) : [argv[0]!, argv.slice(1)]
  const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  p.stderr!.on('data', (d) => (err = (err + d).slice(-4000)))
  ;(p as ChildProcess & { lastErr: () => string }).lastErr = () => err
  t.teardown(() => stop(p))
  return p
}

export function stop(p: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => p.kill('SIGKILL'), 5000)
    p.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    p.kill(signal)
  })
}

// ---------------------------------------------------------------- PgBouncer

export interface PgBouncer {
  port: number
  /** postgres://postgres@127.0.0.1:<port>/<alias> */
  url: string
  process: ChildProcess
}

/**
 * Debian's pgbouncer (1.18) in transaction mode in front of `targetUrl`'s server, serving its
 * database under `alias` (a name the server does not have: anything that bypassed the pooler's
 * mapping would fail). auth_type=any: the pooler logs in as the target URL's user.
 */
export async function startPgBouncer(t: TestContext, targetUrl: string, opts: { alias?: string; poolSize?: number } = {}): Promise<PgBouncer> {
  const target = new URL(targetUrl)
  const alias = opts.alias ?? 'pooled'
  const dir = mkdtempSync(join(tmpdir(), 'parley-pgbouncer-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const port = await freePort()
  const db = decodeURIComponent(target.pathname.slice(1))
  const ini = join(dir, 'pgbouncer.ini')
  writeFileSync(
    ini,
    `[databases]
${alias} = host=${target.hostname} port=${target.port || 5432} dbname=${db} user=${decodeURIComponent(target.username)}${target.password ? ` password=${decodeURIComponent(target.password)}` : ''}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = ${opts.poolSize ?? 4}
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = ${join(dir, 'pgbouncer.log')}
pidfile = ${join(dir, 'pgbouncer.pid')}
`,
  )
  // pgbouncer refuses to run as root unless told which user to become.
  const argv = asRoot ? ['pgbouncer', '-u', 'postgres', ini] : ['pgbouncer', ini]
  if (asRoot) chmodSync(dir, 0o777)
  const p = child(t, argv)
  const url = `postgres://${target.username}@127.0.0.1:${port}/${alias}`
  await waitFor('pgbouncer', async () => {
    if (p.exitCode !== null) throw new Error(`pgbouncer exited: ${(p as ChildProcess & { lastErr: () => string }).lastErr()}`)
    const sql = postgres(url, { max: 1, prepare: false, connect_timeout: 2, onnotice: () => {} })
    try {
      await sql`SELECT 1`
      return true
    } finally {
      await sql.end({ timeout: 1 })
    }
  })
  return { port, url, process: p }
}

// ---------------------------------------------------------------- PostgreSQL primary + replica

export interface PgServer {
  port: number
  dir: string
  /** postgres://postgres@127.0.0.1:<port>/<db> */
  url(db?: string): string
  stop(): Promise<void>
  start(): Promise<void>
}

function pgServer(t: TestContext, dir: string, port: number): PgServer {
  let running = false
  // pg_ctl, not a child process: runuser does not pass signals on, and a server must never outlive the test.
  t.teardown(() => {
    if (running) spawnSync(...pgUser([join(PG_BIN, 'pg_ctl'), 'stop', '-D', dir, '-m', 'immediate', '-w']))
  })
  const server: PgServer = {
    port,
    dir,
    url: (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`,
    async start() {
      const opts = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir}`
      run([join(PG_BIN, 'pg_ctl'), 'start', '-D', dir, '-o', opts, '-l', join(dir, 'server.log'), '-w', '-t', '30'])
      running = true
    },
    async stop() {
      run([join(PG_BIN, 'pg_ctl'), 'stop', '-D', dir, '-m', 'fast', '-w'])
      running = false
    },
  }
  return server
}

/**
 * A PostgreSQL 15 primary (wal_level=replica, replication from 127.0.0.1 trusted) and a
 * streaming standby made with `pg_basebackup -R`, each in a temp dir on a free port. `settings`
 * (postgresql.conf lines) override the small test defaults: the replica copies them.
 */
export async function startPrimaryAndReplica(t: TestContext, settings = ''): Promise<{ primary: PgServer; replica: PgServer }> {
  const root = engineDir('parley-pg-')
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const pdir = join(root, 'primary')
  const rdir = join(root, 'replica')
  run([join(PG_BIN, 'initdb'), '-D', pdir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'])
  writeFileSync(join(pdir, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n')
  writeFileSync(join(pdir, 'postgresql.auto.conf'), `wal_level = replica\nmax_wal_senders = 5\nfsync = off\nfull_page_writes = off\nshared_buffers = '32MB'\n${settings}`)
  const primary = pgServer(t, pdir, await freePort())
  await primary.start()
  run([join(PG_BIN, 'pg_basebackup'), '-R', '-D', rdir, '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-X', 'stream'])
  const replica = pgServer(t, rdir, await freePort())
  await replica.start()
  return { primary, replica }
}

// ---------------------------------------------------------------- Redis Cluster

export interface RedisNode {
  port: number
  process: ChildProcess
}

/** Six redis-server cluster nodes joined as 3 primaries with a replica each. */
export async function startRedisCluster(t: TestContext): Promise<{ nodes: RedisNode[]; url: string }> {
  const root = mkdtempSync(join(tmpdir(), 'parley-redis-cluster-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const nodes: RedisNode[] = []
  for (let i = 0; i < 6; i++) {
    const port = await freePort()
    const argv = ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', join(root, `nodes-${port}.conf`),
      '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', root,
      // A replica whose link to its primary is young or was slow under CI's load must still stand
      // for election when the primary dies (the failover test kills one): no data-age veto.
      '--cluster-replica-validity-factor', '0']
    nodes.push({ port, process: child(t, argv) })
  }
  for (const n of nodes) await waitFor(`redis ${n.port}`, async () => spawnSync('redis-cli', ['-p', String(n.port), 'ping'], { encoding: 'utf8' }).stdout.includes('PONG'))
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8' })
  if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`)
  await waitFor('cluster ok', async () => nodes.every((n) => spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout.includes('cluster_state:ok')), 30_000, 200)
  // Every replica synced with its primary before a test may kill one (a replica still in its first
  // sync cannot be promoted in time).
  await waitFor('replicas synced', async () => {
    const infos = nodes.map((n) => spawnSync('redis-cli', ['-p', String(n.port), 'info', 'replication'], { encoding: 'utf8' }).stdout)
    return infos.filter((i) => i.includes('role:slave') && i.includes('master_link_status:up')).length === 3
  }, 30_000, 200)
  return { nodes, url: `redis-cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}` }
}
