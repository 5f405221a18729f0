import { alternated, BEST_OF_TWO, bestP99, bestRps, ratio, resultOf, type Area, type AreaScenario } from '../lib/area.js'
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
    const ceiling =
      (listQuery: Record<string, unknown>) =>
      (id: string, name: string): AreaScenario => ({
        id,
        label: name,
        kind: 'ceiling',
        method: 'GET',
        path: '/list',
        measure: () => measureCeiling(run, { id, label: name, kind: 'ceiling', method: 'GET', path: '/list' }, listQuery),
      })
    // Each list and its ceiling: two runs each, alternated, when both are wanted (bench/lib/area.ts, `highest`).
    const pair = (list: AreaScenario, ceilingId: string, ceilingLabel: string, listQuery: Record<string, unknown>) =>
      wanted(list.id) && wanted(ceilingId)
        ? alternated(list, ceilingId, ceilingLabel, ceiling(listQuery))
        : [list, ceiling(listQuery)(ceilingId, ceilingLabel)]
    const scenarios: AreaScenario[] = [
      ...pair(
        { id: 'list-label', label: 'GET /conversations?labelIds=<one>', kind: 'read', method: 'GET', path: `/conversations?labelIds=${label}`, headers: headers.largest },
        'ceiling-sql-label',
        'ceiling: labelIds list SQL',
        { labelIds: label },
      ),
      ...pair(
        { id: 'list-priority', label: 'GET /conversations?sortBy=priority', kind: 'read', method: 'GET', path: '/conversations?sortBy=priority', headers: headers.largest },
        'ceiling-sql-priority',
        'ceiling: priority list SQL',
        { sortBy: 'priority' },
      ),
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
          target('labelIds list p99 ms', bestP99(results, 'list-label'), '<', 100, ' ms', BEST_OF_TWO),
          target('labelIds list req/s ÷ its raw-SQL ceiling', ratio(bestRps(results, 'list-label'), bestRps(results, 'ceiling-sql-label')), '>=', 0.8, '', BEST_OF_TWO),
          target('sortBy=priority list p99 ms', bestP99(results, 'list-priority'), '<', 100, ' ms', BEST_OF_TWO),
          target('sortBy=priority req/s ÷ its raw-SQL ceiling', ratio(bestRps(results, 'list-priority'), bestRps(results, 'ceiling-sql-priority')), '>=', 0.8, '', BEST_OF_TWO),
          target('bulk close of 100 p50 ms', bulk?.p50, '<', 500, ' ms', recycled ? 'pool recycled: later requests closed already-closed rows (cheaper)' : undefined),
        ]
      },
    }
  },
}
