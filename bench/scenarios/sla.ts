import { randomUUID } from 'node:crypto'
import pino from 'pino'
import type { Config } from '../../src/config.js'
import type { Deps } from '../../src/context.js'
import { createLocalPublisher } from '../../src/events.js'
import { sweepBreaches } from '../../src/sla/breaches.js'
import { alternated, BEST_OF_TWO, bestP99, bestRps, ratio, resultOf, type Area, type AreaScenario } from '../lib/area.js'
import { scriptContext, benchOwner } from '../lib/context.js'
import type { Measurement } from '../lib/load.js'
import { fmtInt, step } from '../lib/progress.js'
import { target } from '../lib/report.js'
import { measureCeiling } from './ceilings.js'

/**
 * Service levels (issue 28, docs/sla.md): `GET /conversations?sortBy=slaDueAt` page 1 in the
 * largest workspace (seven in ten of its OPEN conversations under a policy, due dates spread
 * over a week, some overdue), against the raw-SQL ceiling of the same sectionQuery; and the
 * breach sweep's cost with 100,000 running targets: an idle sweep (nothing due: what every
 * replica pays each SLA_SWEEP_INTERVAL_MS), and the cost of each breach it records.
 */
const RUNNING = Number(process.env.BENCH_SLA_TARGETS ?? 100_000)
const IDLE_SWEEPS = 200
const DUE = 1_000
/** The default SLA_SWEEP_INTERVAL_MS: 12 sweeps a minute per replica. */
const SWEEPS_PER_MINUTE = 60_000 / 5_000

export const sla: Area = {
  name: 'sla',
  ids: [
    { id: 'list-sla', about: '`GET /conversations?sortBy=slaDueAt` page 1 in the largest workspace (70% of its OPEN conversations with a running target)' },
    { id: 'ceiling-sql-sla', about: 'the raw-SQL ceiling of that query (sectionQuery with sortBy=slaDueAt, no auth, no validation, no mapping)' },
    { id: 'sla-sweep', about: `the breach sweep with ${fmtInt(RUNNING)} running targets: an idle sweep's time (p50/p99 of ${IDLE_SWEEPS}) and ms per breach recorded (${fmtInt(DUE)} due at once)` },
  ],
  async prepare(run, wanted) {
    const { sql, seed, headers } = run
    const ws = seed.largest.id
    const scenarios: AreaScenario[] = []
    const policyId = randomUUID()
    await sql`
      INSERT INTO sla_policies (id, workspace_id, name, first_response_minutes, resolution_minutes, position)
      VALUES (${policyId}, ${ws}, 'Bench SLA', 60, 1440, 0)`
    let sweepNote = ''

    if (wanted('list-sla') || wanted('ceiling-sql-sla')) {
      step('sla: due dates on the largest workspace')
      // Due dates from 2 days ago to 5 days ahead, a pseudo-random spread keyed by the id.
      await sql`
        UPDATE conversations SET sla_policy_id = ${policyId},
          sla_due_at = now() + ((('x' || substr(md5(id::text), 1, 8))::bit(32)::int % 10080) - 2880) * interval '1 minute'
        WHERE workspace_id = ${ws} AND deleted_at IS NULL AND status = 'OPEN'
          AND (('x' || substr(md5(id::text), 9, 8))::bit(32)::int % 10) < 7`
      await sql`
        INSERT INTO sla_targets (conversation_id, workspace_id, target, cycle, policy_id, started_at, due_at, breached)
        SELECT id, workspace_id, 'RESOLUTION', 0, ${policyId}, created_at, sla_due_at, sla_due_at < now()
        FROM conversations WHERE sla_policy_id = ${policyId}
        ON CONFLICT DO NOTHING`
      await sql`ANALYZE conversations`
      const list: AreaScenario = { id: 'list-sla', label: 'GET /conversations?sortBy=slaDueAt', kind: 'read', method: 'GET', path: '/conversations?sortBy=slaDueAt', headers: headers.largest }
      const ceiling = (id: string, label: string): AreaScenario => ({
        id,
        label,
        kind: 'ceiling',
        method: 'GET',
        path: '/list',
        measure: () => measureCeiling(run, { id, label, kind: 'ceiling', method: 'GET', path: '/list' }, { sortBy: 'slaDueAt' }),
      })
      // Two runs each, alternated, when both are wanted (bench/lib/area.ts, `highest`).
      if (wanted('list-sla') && wanted('ceiling-sql-sla')) scenarios.push(...alternated(list, 'ceiling-sql-sla', 'ceiling: slaDueAt list SQL', ceiling))
      else scenarios.push(list, ceiling('ceiling-sql-sla', 'ceiling: slaDueAt list SQL'))
    }

    if (wanted('sla-sweep')) {
      scenarios.push({
        id: 'sla-sweep',
        label: `breach sweep, ${fmtInt(RUNNING)} running targets`,
        kind: 'ceiling',
        method: 'GET',
        path: '/',
        measure: async (): Promise<Measurement> => {
          step(`sla: ${fmtInt(RUNNING)} running targets`)
          // Next-response targets (any cycle) on the largest workspace's conversations, all due
          // in the future (1 minute to 7 days): the sweep's index holds them, none is due.
          const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE workspace_id = ${ws} AND deleted_at IS NULL`
          const perConversation = Math.ceil(RUNNING / Math.max(1, n))
          await sql`
            INSERT INTO sla_targets (conversation_id, workspace_id, target, cycle, policy_id, started_at, due_at)
            SELECT c.id, c.workspace_id, 'NEXT_RESPONSE', g, ${policyId}, now(), now() + (1 + random() * 10080) * interval '1 minute'
            FROM conversations c CROSS JOIN generate_series(1, ${perConversation}) g
            WHERE c.workspace_id = ${ws} AND c.deleted_at IS NULL
            LIMIT ${RUNNING}
            ON CONFLICT DO NOTHING`
          await sql`ANALYZE sla_targets`
          const [{ running }] = await sql<{ running: number }[]>`SELECT count(*)::int AS running FROM sla_targets WHERE due_at IS NOT NULL AND NOT breached`
          const ctx = scriptContext(sql, { CURSOR_SECRET: run.secrets.CURSOR_SECRET } as unknown as Config, benchOwner(ws))
          let published = 0
          const events = createLocalPublisher(pino({ level: 'silent' }))
          const deps: Deps = { ...ctx, events: { ...events, publish: () => void published++ } }
          // Nothing due before the idle measurement (the seeded list targets overdue are breached already).
          await sweepBreaches(deps)
          const idle: number[] = []
          for (let i = 0; i < IDLE_SWEEPS; i++) {
            const t0 = performance.now()
            await sweepBreaches(deps)
            idle.push(performance.now() - t0)
          }
          idle.sort((a, b) => a - b)
          const pct = (p: number) => idle[Math.min(idle.length - 1, Math.floor(p * idle.length))]
          // DUE targets fall due at once: one sweep records them (the API's own sweep, running
          // beside the harness, takes its share: `recorded` counts the harness's only).
          await sql`
            UPDATE sla_targets SET due_at = now() - interval '1 second'
            WHERE (conversation_id, target, cycle) IN (
              SELECT conversation_id, target, cycle FROM sla_targets WHERE target = 'NEXT_RESPONSE' AND NOT breached ORDER BY due_at LIMIT ${DUE})`
          const t0 = performance.now()
          const recorded = await sweepBreaches(deps)
          const busyMs = performance.now() - t0
          const perBreach = recorded > 0 ? busyMs / recorded : undefined
          sweepNote = `${fmtInt(running)} running; idle sweep p50 ${pct(0.5).toFixed(2)} ms, p99 ${pct(0.99).toFixed(2)} ms; ${fmtInt(recorded)} breaches in ${busyMs.toFixed(0)} ms (${perBreach?.toFixed(2)} ms each, ${published} events)`
          step(`sla: ${sweepNote}`)
          return {
            id: 'sla-sweep',
            label: `breach sweep, ${fmtInt(running)} running targets (idle sweep ms)`,
            kind: 'ceiling',
            status: 'ok',
            p50: pct(0.5),
            p90: pct(0.9),
            p99: pct(0.99),
            max: idle[idle.length - 1],
            requests: IDLE_SWEEPS,
            note: `per breach ${perBreach?.toFixed(2)} ms (${recorded} recorded in one sweep)`,
          }
        },
      })
    }

    return {
      scenarios,
      summary: [`sla: policy ${policyId} on the largest workspace; ${fmtInt(RUNNING)} running targets for the sweep`],
      targets: (results) => {
        const sweep = resultOf(results, 'sla-sweep')
        return [
          target('sortBy=slaDueAt list p99 ms', bestP99(results, 'list-sla'), '<', 100, ' ms', BEST_OF_TWO),
          target('sortBy=slaDueAt req/s ÷ its raw-SQL ceiling', ratio(bestRps(results, 'list-sla'), bestRps(results, 'ceiling-sql-sla')), '>=', 0.8, '', BEST_OF_TWO),
          // Every replica sweeps SWEEPS_PER_MINUTE times a minute; idle, that is its whole cost.
          target('breach sweep DB time per minute per replica, idle (ms)', sweep?.p50 !== undefined ? sweep.p50 * SWEEPS_PER_MINUTE : undefined, '<', 600, ' ms', sweepNote),
        ]
      },
    }
  },
}
