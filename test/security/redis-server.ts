import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'

/**
 * A redis-server of the test's own on a free loopback port (STACK.md: the machine's Redis is
 * shared, so a test that stops Redis starts its own), killed at teardown if still running.
 */
export async function startOwnRedis(t: { teardown(fn: () => unknown): void }) {
  const srv = createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const { port } = srv.address() as { port: number }
  await new Promise((r) => srv.close(r))
  const proc: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null })
  probe.on('error', () => {}) // refused until the server is up
  await probe.connect().catch(() => {})
  await probe.ping()
  probe.disconnect()
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise((r) => proc.once('exit', r))
    proc.kill('SIGKILL')
    await exited
  }
  t.teardown(stop)
  return { port, url: `redis://127.0.0.1:${port}`, stop }
}
