import type { ConversationStatus, SlaTarget } from '../db/schema.js'
import { addBusinessTime, businessTimeBetween, type BusinessHours } from './business-time.js'

/**
 * The SLA clock (API.md section 18, docs/sla.md "The clock"), as one pure function: the targets of
 * a conversation under a policy, replayed from the conversation's own history (its creation, the
 * statuses it entered, its public messages). Every change recomputes through it, and so does a
 * policy change, so the live path and the recomputation cannot disagree.
 */

export interface ClockPolicy {
  firstResponseMinutes: number | null
  nextResponseMinutes: number | null
  resolutionMinutes: number | null
  businessHours: BusinessHours | null
}

/** One fact of the history, in order; `at` in epoch milliseconds. */
export type HistoryEvent =
  | { kind: 'status'; at: number; status: ConversationStatus }
  | { kind: 'message'; at: number; sender: 'GUEST' | 'AGENT'; seq: number }

export interface ClockTarget {
  target: SlaTarget
  /** 0 for first response; the reopen number for resolution; the guest message's ordinal for next response. */
  cycle: number
  startedAt: number
  /** The due time (epoch ms) with every pause so far added; null while the clocks stop (PENDING, SNOOZED). */
  dueAt: number | null
  /** running; met (by its due time); late (its event came after the due time); stopped (a close ended it, uncounted). */
  outcome: 'running' | 'met' | 'late' | 'stopped'
  /** When it ended (met, late, stopped). */
  endedAt: number | null
}

const MINUTE = 60_000
const isClosed = (s: ConversationStatus) => s === 'RESOLVED' || s === 'CLOSED'
const isWaiting = (s: ConversationStatus) => s === 'PENDING' || s === 'SNOOZED'

interface Open {
  t: ClockTarget
  minutes: number
  /** Business time spent paused since it started (added to its due date). */
  pausedMs: number
}

export function replay(policy: ClockPolicy, createdAt: number, history: HistoryEvent[]): ClockTarget[] {
  const hours = policy.businessHours
  const done: ClockTarget[] = []
  const open: Open[] = []
  let status: ConversationStatus = 'OPEN'
  let pausedSince: number | null = null
  let lastPublic: 'GUEST' | 'AGENT' | null = null
  let reopens = 0

  const due = (o: Open, extraPausedMs = 0) => addBusinessTime(new Date(o.t.startedAt), o.minutes * MINUTE + o.pausedMs + extraPausedMs, hours).getTime()
  const start = (target: SlaTarget, cycle: number, minutes: number | null, at: number) => {
    if (minutes !== null) open.push({ t: { target, cycle, startedAt: at, dueAt: null, outcome: 'running', endedAt: null }, minutes, pausedMs: 0 })
  }
  /** The clocks run again at `at`: each open target gains the business time it spent paused. */
  const resume = (at: number) => {
    if (pausedSince === null) return
    for (const o of open) o.pausedMs += businessTimeBetween(new Date(Math.max(pausedSince, o.t.startedAt)), new Date(at), hours)
    pausedSince = null
  }
  const end = (which: (o: Open) => boolean, at: number, stop: boolean) => {
    for (let i = open.length - 1; i >= 0; i--) {
      const o = open[i]
      if (!which(o)) continue
      open.splice(i, 1)
      const d = due(o)
      done.push({ ...o.t, dueAt: d, endedAt: at, outcome: stop ? 'stopped' : at <= d ? 'met' : 'late' })
    }
  }
  const enter = (next: ConversationStatus, at: number) => {
    if (next === status || (isClosed(next) && isClosed(status))) return
    if (isClosed(next)) {
      resume(at)
      end((o) => o.t.target === 'RESOLUTION', at, false)
      // A resolved conversation has no running target: the response targets end uncounted.
      end(() => true, at, true)
    } else if (isClosed(status)) {
      reopens++
      start('RESOLUTION', reopens, policy.resolutionMinutes, at)
      if (isWaiting(next)) pausedSince = at
    } else if (isWaiting(next)) {
      if (pausedSince === null) pausedSince = at
    } else {
      resume(at)
    }
    status = next
  }

  start('FIRST_RESPONSE', 0, policy.firstResponseMinutes, createdAt)
  start('RESOLUTION', 0, policy.resolutionMinutes, createdAt)
  for (const e of history) {
    if (e.kind === 'status') {
      enter(e.status, e.at)
    } else if (e.sender === 'GUEST') {
      // A guest message makes a RESOLVED, PENDING or SNOOZED conversation OPEN (section 17).
      enter('OPEN', e.at)
      if (lastPublic === 'AGENT' && !open.some((o) => o.t.target === 'NEXT_RESPONSE')) start('NEXT_RESPONSE', e.seq, policy.nextResponseMinutes, e.at)
      lastPublic = 'GUEST'
    } else {
      // The reply meets the response targets; one that comes while waiting counts the pause up to it.
      if (pausedSince !== null) {
        for (const o of open) {
          if (o.t.target !== 'RESOLUTION') o.pausedMs += businessTimeBetween(new Date(Math.max(pausedSince, o.t.startedAt)), new Date(e.at), hours)
        }
      }
      end((o) => o.t.target !== 'RESOLUTION', e.at, false)
      lastPublic = 'AGENT'
    }
  }
  for (const o of open) done.push({ ...o.t, dueAt: pausedSince === null ? due(o) : null })
  return done
}
