import type { Log } from './logger.js'

/** A periodic sweep of this process (snooze wake-ups, SLA breaches): stop() lets a running pass finish. */
export interface Sweeper {
  stop(): Promise<void>
}

/**
 * Runs `sweep` now and every `intervalMs`, never two passes at once in this process (a pass that
 * overruns the interval skips the ticks it covers). The sweeps are correct across replicas on their
 * own (FOR UPDATE SKIP LOCKED and idempotent writes); this only paces one process. A failed pass is
 * logged as `<what> failed` and the next tick tries again.
 */
export function startSweeper(log: Log, what: string, intervalMs: number, sweep: () => Promise<unknown>): Sweeper {
  let running: Promise<unknown> | null = null
  let stopped = false
  const tick = () => {
    if (running || stopped) return
    running = sweep()
      .catch((err) => log.error({ err }, `${what} failed`))
      .finally(() => {
        running = null
      })
  }
  const timer = setInterval(tick, intervalMs)
  timer.unref()
  tick()
  return {
    async stop() {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
