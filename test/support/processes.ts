import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, chownSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, stepMs = 50): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    try {
      if (await check()) return
    } catch {
      // not yet
    }
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, stepMs))
  }
}

/** A private redis-server on a free port, for tests that stop or freeze it on purpose. */
export async function startRedis(port?: number): Promise<{ url: string; port: number; proc: ChildProcess; stop: () => Promise<void> }> {
  const p = port ?? (await freePort())
  const proc = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  await waitFor(() => spawnSync('redis-cli', ['-p', String(p), 'ping']).stdout?.toString().trim() === 'PONG')
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return
    proc.kill('SIGCONT')
    proc.kill('SIGKILL')
    await new Promise((r) => proc.once('exit', r))
  }
  return { url: `redis://127.0.0.1:${p}`, port: p, proc, stop }
}

const PG_BIN = '/usr/lib/postgresql/15/bin'

/**
 * A private PostgreSQL cluster (initdb into a temp dir, run as the postgres OS user because
 * initdb refuses root), for tests that stop the database on purpose.
 */
export async function startPostgres(): Promise<{ url: string; start: () => Promise<void>; stop: () => Promise<void>; destroy: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-pg-'))
  const data = join(dir, 'data')
  const asPostgres = process.getuid?.() === 0
  if (asPostgres) {
    const { uid, gid } = userIds('postgres')
    chownSync(dir, uid, gid)
  }
  const run = (args: string[]) => {
    const cmd = asPostgres ? 'runuser' : args[0]
    const argv = asPostgres ? ['-u', 'postgres', '--', ...args] : args.slice(1)
    const r = spawnSync(cmd, argv, { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`${args[0]} failed: ${r.stderr || r.stdout}`)
  }
  run([`${PG_BIN}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const port = await freePort()
  const start = async () => {
    run([`${PG_BIN}/pg_ctl`, '-D', data, '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, '-w', '-l', join(dir, 'log'), 'start'])
  }
  const stop = async () => {
    run([`${PG_BIN}/pg_ctl`, '-D', data, '-m', 'immediate', '-w', 'stop'])
  }
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy: async () => {
      try {
        await stop()
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function userIds(name: string): { uid: number; gid: number } {
  const uid = Number(spawnSync('id', ['-u', name], { encoding: 'utf8' }).stdout.trim())
  const gid = Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim())
  return { uid, gid }
}
