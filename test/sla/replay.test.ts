import t from 'tap'
import { replay, type ClockPolicy, type HistoryEvent } from '../../src/sla/clock.js'

/**
 * The pure SLA clock (src/sla/clock.ts, docs/sla.md "The clock" and "Pause"): targets replayed
 * from a history, with business hours, pauses, closes and reopens.
 */

const at = (s: string) => Date.parse(s)
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const office = {
  timezone: 'UTC',
  days: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri'].map((d) => [d, [['09:00', '17:00']]])),
  holidays: [],
}
const policy = (p: Partial<ClockPolicy>): ClockPolicy => ({ firstResponseMinutes: null, nextResponseMinutes: null, resolutionMinutes: null, businessHours: null, ...p })
const status = (when: string, s: 'OPEN' | 'PENDING' | 'SNOOZED' | 'RESOLVED'): HistoryEvent => ({ kind: 'status', at: at(when), status: s })
const msg = (when: string, sender: 'GUEST' | 'AGENT', seq: number): HistoryEvent => ({ kind: 'message', at: at(when), sender, seq })

t.test('business hours: a pause adds the business time spent waiting (Monday 10:00, 60 minutes, pending 10:30 to Tuesday 10:00)', async (t) => {
  const [fr] = replay(policy({ firstResponseMinutes: 60, businessHours: office }), at('2026-11-23T10:00:00Z'), [
    status('2026-11-23T10:30:00Z', 'PENDING'),
    status('2026-11-24T10:00:00Z', 'OPEN'),
  ])
  t.equal(iso(fr.dueAt), '2026-11-24T10:30:00.000Z', '30 minutes used before the pause, 30 after: Tuesday 10:30')
  t.equal(fr.outcome, 'running')
})

t.test('a weekend snoozed under Monday-Friday hours costs only the business time in it', async (t) => {
  const [fr] = replay(policy({ firstResponseMinutes: 120, businessHours: office }), at('2026-11-20T16:00:00Z'), [
    status('2026-11-20T16:30:00Z', 'SNOOZED'),
    status('2026-11-23T10:00:00Z', 'OPEN'),
  ])
  t.equal(iso(fr.dueAt), '2026-11-23T11:30:00.000Z', '30 minutes on Friday, 90 from Monday 10:00')
})

t.test('round the clock: the due date moves by the wall time paused; while paused it is null', async (t) => {
  const p = policy({ firstResponseMinutes: 10, resolutionMinutes: 60 })
  const paused = replay(p, at('2026-11-24T10:00:00Z'), [status('2026-11-24T10:05:00Z', 'PENDING')])
  t.same(paused.map((x) => [x.target, x.outcome, x.dueAt]), [['FIRST_RESPONSE', 'running', null], ['RESOLUTION', 'running', null]])
  const back = replay(p, at('2026-11-24T10:00:00Z'), [status('2026-11-24T10:05:00Z', 'PENDING'), status('2026-11-24T12:05:00Z', 'OPEN')])
  t.same(back.map((x) => iso(x.dueAt)), ['2026-11-24T12:10:00.000Z', '2026-11-24T13:00:00.000Z'])
})

t.test('first, next and resolution through replies, a close and reopens', async (t) => {
  const p = policy({ firstResponseMinutes: 10, nextResponseMinutes: 5, resolutionMinutes: 60 })
  const out = replay(p, at('2026-11-24T10:00:00Z'), [
    msg('2026-11-24T10:00:01Z', 'GUEST', 1),
    msg('2026-11-24T10:09:00Z', 'AGENT', 2), // first response met
    msg('2026-11-24T10:20:00Z', 'GUEST', 3), // next response 3 starts
    msg('2026-11-24T10:21:00Z', 'GUEST', 4), // already running
    msg('2026-11-24T10:30:00Z', 'AGENT', 5), // late: due 10:25
    msg('2026-11-24T10:40:00Z', 'GUEST', 6), // next response 6 starts
    status('2026-11-24T10:41:00Z', 'RESOLVED'), // resolution met; next response 6 stops uncounted
    msg('2026-11-24T12:00:00Z', 'GUEST', 7), // reopens: resolution 1 starts; the last public message was the guest's: no next response
    status('2026-11-24T12:00:01Z', 'OPEN'),
    status('2026-11-24T13:30:00Z', 'RESOLVED'), // resolution 1 late (due 13:00)
    status('2026-11-24T14:00:00Z', 'PENDING'), // reopened straight into PENDING: resolution 2 starts paused
  ])
  const by = (target: string, cycle: number) => out.find((x) => x.target === target && x.cycle === cycle)
  t.equal(by('FIRST_RESPONSE', 0)?.outcome, 'met')
  t.equal(by('NEXT_RESPONSE', 3)?.outcome, 'late')
  t.equal(iso(by('NEXT_RESPONSE', 3)!.dueAt), '2026-11-24T10:25:00.000Z')
  t.notOk(by('NEXT_RESPONSE', 4), 'a guest message while it runs does not start another')
  t.equal(by('NEXT_RESPONSE', 6)?.outcome, 'stopped', 'a close ends it uncounted')
  t.equal(by('RESOLUTION', 0)?.outcome, 'met')
  t.notOk(by('NEXT_RESPONSE', 7), 'no agent reply before it')
  t.equal(by('RESOLUTION', 1)?.outcome, 'late')
  t.match(by('RESOLUTION', 2), { outcome: 'running', dueAt: null, startedAt: at('2026-11-24T14:00:00Z') })
  t.equal(out.filter((x) => x.target === 'FIRST_RESPONSE').length, 1, 'first response measured once')
})

t.test('a reply while PENDING meets the response target with the pause so far counted', async (t) => {
  const [fr] = replay(policy({ firstResponseMinutes: 10 }), at('2026-11-24T10:00:00Z'), [
    status('2026-11-24T10:08:00Z', 'PENDING'),
    msg('2026-11-24T10:30:00Z', 'AGENT', 1),
  ])
  t.equal(fr.outcome, 'met', '8 minutes of running time: met')
  t.equal(iso(fr.dueAt), '2026-11-24T10:32:00.000Z')
})
