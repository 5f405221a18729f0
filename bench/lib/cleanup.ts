import type { ChildProcess } from 'node:child_process'
import { step } from './progress.js'

/**
 * Everything the harness creates (database, child processes, Redis keys) registers its undo
 * here. The undo steps run in reverse order once: at the end of a run, on an error, and on
 * Ctrl-C / SIGTERM. Child processes also get a last-resort SIGKILL when the harness exits.
 */
const steps: { name: string; fn: () => Promise<unknown> | unknown }[] = []
const children = new Set<ChildProcess>()
let running: Promise<void> | undefined
/** Set once a signal started the cleanup: errors from work cut short are expected then. */
export let interrupted = false

export function onCleanup(name: string, fn: () => Promise<unknown> | unknown): void {
  steps.push({ name, fn })
}

export function trackChild(child: ChildProcess): void {
  children.add(child)
  child.once('exit', () => children.delete(child))
}

export function cleanup(): Promise<void> {
  running ??= (async () => {
    for (const s of steps.reverse()) {
      try {
        await s.fn()
      } catch (err) {
        step(`cleanup "${s.name}" failed: ${(err as Error).message}`)
      }
    }
  })()
  return running
}

export function installSignalHandlers(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      interrupted = true
      step(`${signal}: cleaning up (database, child processes)`)
      void cleanup().finally(() => process.exit(130))
    })
  }
  process.on('exit', () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  })
}
