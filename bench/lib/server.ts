import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { readFileSync } from 'node:fs'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { trackChild } from './cleanup.js'

export interface Child {
  name: string
  process: ChildProcess
  pid: number
  url: string
  /** The last lines the child wrote (shown when it dies). */
  output(): string
  stop(): Promise<void>
}

/**
 * Starts a server as a child process (node directly, never through npm, so signals and /proc
 * numbers are its own) and waits until `readyPath` answers 2xx.
 */
export async function startChild(opts: {
  name: string
  args: string[]
  env: NodeJS.ProcessEnv
  port: number
  readyPath: string
  timeoutMs?: number
}): Promise<Child> {
  const child = spawn(process.execPath, opts.args, { env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] })
  trackChild(child)
  const lines: string[] = []
  const keep = (buf: Buffer) => {
    for (const l of buf.toString().split('\n')) if (l.trim()) lines.push(l)
    if (lines.length > 200) lines.splice(0, lines.length - 200)
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const url = `http://127.0.0.1:${opts.port}`
  const output = () => lines.slice(-30).join('\n')
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${opts.name} exited with ${child.exitCode} before it was ready:\n${output()}`)
    try {
      const res = await fetch(url + opts.readyPath)
      if (res.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${opts.name} was not ready within ${opts.timeoutMs ?? 30_000} ms:\n${output()}`)
    }
    await sleep(100)
  }
  return {
    name: opts.name,
    process: child,
    pid: child.pid!,
    url,
    output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Resident memory of a process in MiB, from /proc: current (VmRSS) and peak since start (VmHWM). */
export function memoryOf(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
  } catch {
    return undefined
  }
}

/**
 * CPU time a process has used so far (user + system), in ms, from /proc/<pid>/stat (clock ticks
 * of 10 ms, Linux's USER_HZ). Per request, it is what the server itself spends, whatever else
 * loads the machine: a crowded machine lowers req/s far more than it raises CPU per request.
 */
export function cpuMsOf(pid: number): number | undefined {
  try {
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

/** Samples a process's RSS every `everyMs` while a measurement runs; returns the highest seen. */
export function sampleRss(pid: number, everyMs = 100): { stop(): number } {
  let max = memoryOf(pid)?.rss ?? 0
  const timer = setInterval(() => {
    const m = memoryOf(pid)
    if (m && m.rss > max) max = m.rss
  }, everyMs)
  return {
    stop() {
      clearInterval(timer)
      const m = memoryOf(pid)
      if (m && m.rss > max) max = m.rss
      return max
    },
  }
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
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
