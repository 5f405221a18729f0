import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import type { Signals } from '../signals.js'
import { announcePositions, queuedTeams, routeTeam, teamsOf, type RoutingDeps } from './routing.js'

/**
 * When routing runs in this process (docs/routing.md): on request after a commit that may make
 * someone eligible (`teams`, `member`), on a member-online signal from any gateway, and every
 * ROUTING_SWEEP_MS over every non-empty queue, the backstop for a lost trigger. Passes of one
 * team are coalesced here (a request during a pass runs one more pass after it); across
 * replicas the team's advisory lock orders them (./routing.ts).
 */
export interface Router {
  /** Routes these teams soon (after the caller's commit). Never throws. */
  teams(teamIds: (string | null | undefined)[]): void
  /** Tells the first queued visitors of a team their place (a conversation left its queue by hand). */
  positions(teamId: string): void
  /** Routes every team of this member (a slot freed, the member came online). */
  member(workspaceId: string, userId: string): void
  /** Starts the sweep and the signal subscription (the API process). */
  start(signals: Signals): void
  /** Stops them and waits for the passes under way. */
  stop(): Promise<void>
  /** One sweep now (tests, the benchmark). */
  sweep(): Promise<void>
}

export function createRouter(config: Pick<Config, 'ROUTING_SWEEP_MS'>, deps: () => RoutingDeps): Router {
  const state = new Map<string, { again: boolean; done: Promise<void> }>()
  let timer: NodeJS.Timeout | null = null
  let unsubscribe: (() => void) | null = null
  let stopped = false
  const log = (): Log => deps().log

  const run = (teamId: string): Promise<void> => {
    const running = state.get(teamId)
    if (running) {
      running.again = true
      return running.done
    }
    const entry = { again: false, done: Promise.resolve() }
    entry.done = (async () => {
      try {
        do {
          entry.again = false
          await routeTeam(deps(), teamId)
        } while (entry.again && !stopped)
      } catch (err) {
        log().warn({ err: { message: (err as Error).message }, teamId }, 'routing pass failed (the sweep retries)')
      } finally {
        state.delete(teamId)
      }
    })()
    state.set(teamId, entry)
    return entry.done
  }

  const member = (workspaceId: string, userId: string) => {
    teamsOf(deps().sql, workspaceId, userId).then(
      (ids) => ids.forEach((id) => void run(id)),
      (err: Error) => log().warn({ err: { message: err.message } }, 'routing: teams of a member not read'),
    )
  }

  const sweep = async () => {
    try {
      await Promise.all((await queuedTeams(deps().sql)).map(run))
    } catch (err) {
      log().warn({ err: { message: (err as Error).message } }, 'routing sweep failed')
    }
  }

  return {
    teams(teamIds) {
      if (stopped) return
      for (const id of new Set(teamIds)) if (id) void run(id)
    },
    member(workspaceId, userId) {
      if (!stopped) member(workspaceId, userId)
    },
    positions(teamId) {
      announcePositions(deps(), teamId).catch((err: Error) => log().warn({ err: { message: err.message }, teamId }, 'queue positions not sent'))
    },
    start(signals) {
      unsubscribe = signals.onMemberOnline((s) => member(s.workspaceId, s.userId))
      if (config.ROUTING_SWEEP_MS > 0) {
        const tick = () => {
          timer = setTimeout(() => void sweep().finally(() => !stopped && tick()), config.ROUTING_SWEEP_MS)
          timer.unref()
        }
        tick()
      }
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      unsubscribe?.()
      await Promise.allSettled([...state.values()].map((s) => s.done))
    },
    sweep,
  }
}
