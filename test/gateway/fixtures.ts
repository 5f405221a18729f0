import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { io as connectClient, type ManagerOptions, type Socket, type SocketOptions } from 'socket.io-client'
import { testEnv, type TestContext } from '../helper.js'
import { createTestDatabase } from '../setup/database.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** A fresh database and Redis prefix for one file, so the API app and the gateways can start in parallel. */
export async function testDatabaseAndPrefix(t: TestContext) {
  const db = await createTestDatabase()
  t.teardown(db.drop)
  return { databaseUrl: db.url, redisPrefix: `t:${randomBytes(6).toString('hex')}:` }
}

export interface GatewayProcess {
  url: string
  port: number
  proc: ChildProcess
  /** Every JSON log line so far. */
  logs: Record<string, unknown>[]
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/**
 * Runs `node --import tsx src/gateway/server.ts` (what `npm run gateway` runs) as a real child
 * process on a free port, sharing the test's database and Redis prefix, and stops it at teardown.
 */
export async function startGateway(
  t: TestContext,
  opts: { databaseUrl: string; redisPrefix: string; env?: Record<string, string> },
): Promise<GatewayProcess> {
  const env = testEnv({
    DATABASE_URL: opts.databaseUrl,
    REDIS_PREFIX: opts.redisPrefix,
    GATEWAY_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    MEMBER_CACHE_TTL_MS: '0',
    DATABASE_POOL_MAX: '3',
    ...opts.env,
  })
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/gateway/server.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs: Record<string, unknown>[] = []
  let stderr = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  )
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
    await exited
  })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start: ${stderr}`)), 30_000)
    let buffered = ''
    proc.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      let nl: number
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl)
        buffered = buffered.slice(nl + 1)
        if (!line.trim()) continue
        const entry = JSON.parse(line) as Record<string, unknown>
        logs.push(entry)
        if (entry.msg === 'gateway listening') {
          clearTimeout(timer)
          resolve(entry.port as number)
        }
      }
    })
    proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`gateway exited: ${stderr}`))
    })
  })
  return { url: `http://127.0.0.1:${port}`, port, proc, logs, exited }
}

export interface ConnectError extends Error {
  data?: { code: string; message: string }
}

/** Connects and resolves once the handshake is accepted; closed at teardown. */
export function connect(t: TestContext, url: string, auth: Record<string, unknown>, options: Partial<ManagerOptions & SocketOptions> = {}): Promise<Socket> {
  const socket = connectClient(url, { auth, transports: ['websocket'], reconnection: false, forceNew: true, timeout: 10_000, ...options })
  t.teardown(() => {
    socket.disconnect()
  })
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket))
    socket.once('connect_error', (err) => {
      socket.disconnect()
      reject(err)
    })
  })
}

/** Resolves with the refusal (connect_error) of a handshake that must fail. */
export async function refusal(t: TestContext, url: string, auth: Record<string, unknown>, options: Partial<ManagerOptions & SocketOptions> = {}): Promise<ConnectError> {
  try {
    const socket = await connect(t, url, auth, options)
    socket.disconnect()
  } catch (err) {
    return err as ConnectError
  }
  throw new Error('the handshake was accepted')
}

/** Records every `event` a socket receives, in order. */
export function record<T = unknown>(socket: Socket, event: string): T[] {
  const seen: T[] = []
  socket.on(event, (payload: T) => seen.push(payload))
  return seen
}

/** The next `event` on `socket` that satisfies `match`, or a rejection after `timeoutMs`. */
export function next<T = unknown>(socket: Socket, event: string, match: (p: T) => boolean = () => true, timeoutMs = 5000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off(event, on)
      reject(new Error(`no ${event} within ${timeoutMs} ms`))
    }, timeoutMs)
    const on = (payload: T) => {
      if (!match(payload)) return
      clearTimeout(timer)
      socket.off(event, on)
      resolve(payload)
    }
    socket.on(event, on)
  })
}

/** Emits with an acknowledgement and resolves with the gateway's reply. */
export function emitWithAck(socket: Socket, event: string, payload: unknown): Promise<unknown> {
  return socket.timeout(5000).emitWithAck(event, payload)
}

/** Polls `check` until it returns true (for state that settles asynchronously), failing after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5000, everyMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
