import { ratio, resultOf, type Area, type AreaScenario } from '../lib/area.js'
import { fmtInt } from '../lib/progress.js'
import { target } from '../lib/report.js'
import { measureCeiling } from './ceilings.js'

/**
 * Section 17 (docs/triage.md): the label filter and the priority sort of GET /conversations in
 * the largest workspace, each against the raw-SQL ceiling of its own query (the same sectionQuery
 * through a bare server), and a bulk close of 100 conversations.
 */
export const triage: Area = {
  name: 'triage',
  ids: [
    { id: 'list-label', about: '`GET /conversations?labelIds=<L1>` in the largest workspace (a label on about 15% of the conversations)' },
    { id: 'ceiling-sql-label', about: 'the raw-SQL ceiling of that query (sectionQuery with labelIds, no auth, no validation, no mapping)' },
    { id: 'list-priority', about: '`GET /conversations?sortBy=priority` in the largest workspace' },
    { id: 'ceiling-sql-priority', about: 'the raw-SQL ceiling of that query' },
    {
      id: 'bulk-close',
      about: '`POST /conversations/bulk {action: close}` of 100 OPEN conversations of the largest workspace, each request new ones, 4 connections (an agent bulk action, not a crowd)',
    },
  ],
  async prepare(run, wanted) {
    const { sql, seed, headers } = run
    const label = seed.largest.labels[1]
    const scenarios: AreaScenario[] = [
      { id: 'list-label', label: 'GET /conversations?labelIds=<one>', kind: 'read', method: 'GET', path: `/conversations?labelIds=${label}`, headers: headers.largest },
      {
        id: 'ceiling-sql-label',
        label: 'ceiling: labelIds list SQL, no auth',
        kind: 'ceiling',
        method: 'GET',
        path: '/list',
        measure: () => measureCeiling(run, { id: 'ceiling-sql-label', label: 'ceiling: labelIds list SQL', kind: 'ceiling', method: 'GET', path: '/list' }, { labelIds: label }),
      },
      { id: 'list-priority', label: 'GET /conversations?sortBy=priority', kind: 'read', method: 'GET', path: '/conversations?sortBy=priority', headers: headers.largest },
      {
        id: 'ceiling-sql-priority',
        label: 'ceiling: sortBy=priority list SQL, no auth',
        kind: 'ceiling',
        method: 'GET',
        path: '/list',
        measure: () => measureCeiling(run, { id: 'ceiling-sql-priority', label: 'ceiling: priority list SQL', kind: 'ceiling', method: 'GET', path: '/list' }, { sortBy: 'priority' }),
      },
    ]
    // Bulk close in the largest workspace: every request must close 100 OPEN conversations, so the
    // pool must outlast the run (the small workspace's ~6,000 OPEN rows were 60 requests: at
    // 17 req/s the warmup alone used them up, and the rest of the run measured closes of
    // already-resolved rows, which change nothing). Its ~60% OPEN rows are 330 requests at
    // 100,000 conversations, 3,300 at 1M. This area is measured last, so closing rows of the
    // largest workspace disturbs no other scenario.
    const pool = wanted('bulk-close')
      ? (
          await sql<{ id: string }[]>`
            SELECT id FROM conversations WHERE workspace_id = ${seed.largest.id} AND deleted_at IS NULL AND status = 'OPEN' ORDER BY id`
        ).map((r) => r.id)
      : []
    let next = 0
    let recycled = false
    const hundred = () => {
      if (next + 100 > pool.length) {
        next = 0
        recycled = true
      }
      next += 100
      return pool.slice(next - 100, next)
    }
    scenarios.push({
      id: 'bulk-close',
      label: 'POST /conversations/bulk close x100',
      kind: 'write',
      method: 'POST',
      path: '/conversations/bulk',
      headers: { ...headers.largest, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: pool.slice(0, 100), action: 'close' }),
      connections: 4,
      vary: (req) => ({ ...req, body: JSON.stringify({ ids: hundred(), action: 'close' }) }),
      note: `pool of ${fmtInt(pool.length)} OPEN conversations`,
      unavailable: pool.length < 100 ? 'n/a (fewer than 100 OPEN conversations)' : undefined,
    })
    return {
      scenarios,
      summary: [`triage: label L1 in the largest workspace; bulk-close pool ${fmtInt(pool.length)}`],
      targets: (results) => {
        const bulk = resultOf(results, 'bulk-close')
        return [
          target('labelIds list p99 ms', resultOf(results, 'list-label')?.p99, '<', 100, ' ms'),
          target('labelIds list req/s ÷ its raw-SQL ceiling', ratio(resultOf(results, 'list-label')?.rps, resultOf(results, 'ceiling-sql-label')?.rps), '>=', 0.8, ''),
          target('sortBy=priority list p99 ms', resultOf(results, 'list-priority')?.p99, '<', 100, ' ms'),
          target('sortBy=priority req/s ÷ its raw-SQL ceiling', ratio(resultOf(results, 'list-priority')?.rps, resultOf(results, 'ceiling-sql-priority')?.rps), '>=', 0.8, ''),
          target('bulk close of 100 p50 ms', bulk?.p50, '<', 500, ' ms', recycled ? 'pool recycled: later requests closed already-closed rows (cheaper)' : undefined),
        ]
      },
    }
  },
}
