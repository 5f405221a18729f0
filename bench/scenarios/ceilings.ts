import { writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { toConversationView } from '../../src/conversations/view.js'
import type { AreaScenario, Area, BenchRun } from '../lib/area.js'
import { onCleanup } from '../lib/cleanup.js'
import { measure, probe, type Measurement, type Scenario } from '../lib/load.js'
import { freePort, startChild, type Child } from '../lib/server.js'
import { listPageOne } from '../list-sql.js'
import { BENCH_DIR, RESULTS_DIR } from '../lib/paths.js'

/**
 * What the list endpoint is compared with, each a minimal server of its own (bench/ceiling-server.ts):
 * the framework alone answering a constant page, and the list's own SQL with no auth, validation
 * or mapping. The SQL ceiling runs twice, before and after the list scenarios: a run disturbed by
 * other work on the machine only lowers a ceiling, so the target divides by the higher of the two.
 */
export const ceilings: Area = {
  name: 'ceilings',
  ids: [
    { id: 'ceiling-framework', about: 'a bare Fastify route answering a constant object the size of the list page (the API\'s own page 1, serialised per request): the framework\'s limit' },
    { id: 'ceiling-sql', about: 'a bare Fastify route running the list endpoint\'s own SQL (`pageKeys` from `src/conversations/lists.ts`: the route\'s own statements) through postgres.js with the app\'s pool settings, no auth, no validation, no mapping: the database\'s limit; run again after the list scenarios (`ceiling-sql-again`) when `list-page1` runs too' },
    { id: 'ceiling-sql-generic', optIn: true, about: 'the raw-SQL ceiling with `plan_cache_mode=force_generic_plan` (diagnostic: what planning costs)' },
  ],
  async prepare(run, wanted) {
    const scenarios: AreaScenario[] = []
    const add = (s: Scenario & { after?: string }) => scenarios.push({ ...s, measure: () => measureCeiling(run, s) })
    if (wanted('ceiling-framework')) add({ id: 'ceiling-framework', label: 'ceiling: bare Fastify, constant list page', kind: 'ceiling', method: 'GET', path: '/list' })
    if (wanted('ceiling-sql')) add({ id: 'ceiling-sql', label: 'ceiling: list SQL via postgres.js, no auth', kind: 'ceiling', method: 'GET', path: '/list' })
    if (wanted('ceiling-sql') && wanted('list-page1')) {
      add({ id: 'ceiling-sql-again', label: 'ceiling: list SQL via postgres.js, no auth (again)', kind: 'ceiling', method: 'GET', path: '/list', after: 'list-deep' })
    }
    if (wanted('ceiling-sql-generic')) {
      add({ id: 'ceiling-sql-generic', label: 'ceiling: list SQL, plan_cache_mode=force_generic_plan', kind: 'ceiling', method: 'GET', path: '/list', note: 'diagnostic: what planning costs', after: 'webhook-a' })
    }
    return { scenarios }
  },
}

/**
 * Starts a ceiling server (framework or SQL), measures it, stops it. `listQuery`: the SQL
 * ceiling of a list with other parameters (bench/scenarios/triage.ts).
 */
export async function measureCeiling(run: BenchRun, s: Scenario, listQuery?: Record<string, unknown>): Promise<Measurement> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', PORT: String(port), ...run.runtimeEnv }
  const workspaceId = run.seed.largest.id
  let note: string | undefined
  if (s.id === 'ceiling-framework') {
    // The API's own page 1 when the route exists; else the same rows through the shared view.
    const page = await probe(run.api.url, { id: 'x', label: 'x', kind: 'read', method: 'GET', path: '/conversations', headers: run.headers.largest })
    let body = page.status === 200 ? page.body : undefined
    if (!body) {
      const { rows } = await listPageOne(run.sql, workspaceId, 20)
      body = JSON.stringify({ data: rows.map((r) => toConversationView(r)), nextCursor: 'x'.repeat(160) })
      note = 'page synthesised (list route missing)'
    }
    const file = join(RESULTS_DIR, `.ceiling-body-${process.pid}.json`)
    writeFileSync(file, body)
    onCleanup('remove ceiling body file', () => rm(file, { force: true }))
    env.BODY_FILE = file
  } else {
    Object.assign(env, { DATABASE_URL: run.dbUrl, WORKSPACE_ID: workspaceId, DATABASE_POOL_MAX: '10' })
    if (s.id === 'ceiling-sql-generic') env.PLAN_CACHE_MODE = 'force_generic_plan'
    if (listQuery) env.LIST_QUERY = JSON.stringify(listQuery)
  }
  const mode = s.id === 'ceiling-framework' ? 'framework' : 'sql'
  const child: Child = await startChild({
    name: `ceiling ${mode}`,
    args: ['--import', 'tsx', join(BENCH_DIR, 'ceiling-server.ts'), mode],
    env,
    port,
    readyPath: '/ready',
  })
  try {
    const m = await measure(child.url, child.pid, s, run.load)
    return note ? { ...m, note } : m
  } finally {
    await child.stop()
  }
}
