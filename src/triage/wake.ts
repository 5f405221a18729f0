import { contextFor, type Deps } from '../context.js'
import { wakeSnoozed } from './status.js'
import { startSweeper, type Sweeper } from '../sweeper.js'

/**
 * Timed snooze wake-ups (API.md section 17, docs/triage.md "Wake-ups"). The due time is the
 * conversation's own indexed column (`snoozed_until`, conv_snoozed_until_idx), so nothing is held
 * in a process: every API replica with JOBS_WORKER sweeps every SNOOZE_SWEEP_INTERVAL_MS, a
 * restarted or crashed replica loses nothing, and a wake-up happens at most one interval (plus the
 * sweep's own time) after `until`. Each due row is woken in its own transaction with
 * `FOR UPDATE SKIP LOCKED` and its status re-checked under the lock (wakeSnoozed), so several
 * replicas never wake one conversation twice and never wait on one another.
 */

/** Due rows taken per sweep round; a round that fills it runs again at once. */
export const WAKE_BATCH = 200

/** One sweep: wakes every conversation due now. Returns how many this process woke. */
export async function sweepSnoozed(deps: Deps): Promise<number> {
  const ctx = contextFor(deps, { kind: 'system' })
  let woken = 0
  for (;;) {
    // Candidates only (no lock): wakeSnoozed locks and re-checks each one. now() (this statement's
    // start), not clock_timestamp(): a stable bound the index range can use (an idle sweep reads
    // only the due rows, not every future snooze).
    const due = await deps.sql<{ id: string; workspaceId: string }[]>`
      SELECT id, workspace_id AS "workspaceId" FROM conversations
      WHERE status = 'SNOOZED' AND snoozed_until IS NOT NULL AND deleted_at IS NULL AND snoozed_until <= now()
      ORDER BY snoozed_until
      LIMIT ${WAKE_BATCH}`
    let round = 0
    for (const c of due) if (await wakeSnoozed(ctx, c)) round++
    woken += round
    // A full batch that woke nothing is rows other transactions hold: the next tick retries them.
    if (due.length < WAKE_BATCH || round === 0) return woken
  }
}

/** Starts the periodic sweep in this process (src/sweeper.ts). */
export function startSnoozeSweeper(deps: Deps, intervalMs: number): Sweeper {
  return startSweeper(deps.log, 'snooze sweep', intervalMs, () => sweepSnoozed(deps))
}
