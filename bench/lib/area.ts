import type { Pool } from './db.js'
import type { LoadOptions, Measurement, Scenario } from './load.js'
import type { Target } from './report.js'
import type { SeedResult } from './seed.js'
import type { Child } from './server.js'

/** What a run knows once the database is seeded and the API answers: every area prepares from it. */
export interface BenchRun {
  api: Child
  /** The harness's own pool on the bench database. */
  sql: Pool
  dbUrl: string
  seed: SeedResult
  load: LoadOptions
  /** Unique per run: keeps idempotency keys and event ids of two runs apart. */
  runTag: string
  secrets: { AUTH_JWT_SECRET: string; VISITOR_SESSION_SECRET: string; CURSOR_SECRET: string; PROVIDER_A_WEBHOOK_SECRET: string; CHANNEL_SECRET_KEY: string }
  /** The API's STORAGE_DIR (local driver): a temporary directory, removed at the end. */
  storageDir: string
  /** The API's Redis (presence, events): scenarios that act as a gateway write there. */
  redis: { url: string; prefix: string }
  /** An owner's headers in the largest and in the small workspace. */
  headers: { largest: Record<string, string>; small: Record<string, string> }
  /**
   * The V8 settings the API runs with (NODE_OPTIONS, HEAP_GROWING_PERCENT when the bench's
   * environment sets it): every ceiling server runs with them too, so a ratio compares the code,
   * not two garbage collectors tuned differently (bench/README.md, "Ceilings run as the API runs").
   */
  runtimeEnv: NodeJS.ProcessEnv
}

/** A scenario as an area declares it; main measures it unless it says otherwise. */
export interface AreaScenario extends Scenario {
  /** Measures it some other way (the ceiling servers); default: autocannon against the API. */
  measure?: () => Promise<Measurement>
  /** Not measurable in this run, and why (e.g. no deep cursor). */
  unavailable?: string
  /** Runs right after this scenario id instead of in its area's order. */
  after?: string
}

export interface PreparedArea {
  scenarios: AreaScenario[]
  /** Lines for the report's header (seed checks, word frequencies). */
  summary?: string[]
  /** Judged once every scenario ran, from all of them. */
  targets?(results: Measurement[]): Target[]
  /** After the measurements: EXPLAIN output and data for the JSON file. */
  report?(): Promise<{ explain?: Record<string, string>; data?: Record<string, unknown> }>
}

/**
 * One area of the benchmark (lists, search, ...): the scenario ids it offers and how to prepare
 * them. bench/scenarios/index.ts lists the areas; a new area adds its file there and nothing else.
 */
export interface Area {
  name: string
  /** Selectable scenario ids, in run order; optIn ones run only when named in --scenarios. */
  ids: readonly { id: string; optIn?: boolean; about: string }[]
  /** Called once the API runs, before any measurement, with the scenarios this run wants. */
  prepare(run: BenchRun, wanted: (id: string) => boolean): Promise<PreparedArea>
}

/** The measurement of a scenario whose ok result is `id`, if it ran. */
export const resultOf = (results: Measurement[], id: string) => results.find((r) => r.id === id && r.status === 'ok')
export const ratio = (a?: number, b?: number) => (a !== undefined && b ? a / b : undefined)

/**
 * The highest / lowest of the values measured (undefined when none was). A comparison of the API
 * with its ceiling runs each side twice, alternated, and takes each side's best: other work on the
 * machine only lowers a req/s and raises a p99, so one side's best of two against the other's one
 * run would favour the side run twice (issue 31).
 */
export function highest(values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined && v > 0)
  return known.length ? Math.max(...known) : undefined
}
export function lowest(values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined && v > 0)
  return known.length ? Math.min(...known) : undefined
}

/**
 * A list and its raw-SQL ceiling, each run twice, alternated: list, ceiling, list again, ceiling
 * again (the `-again` runs follow their leader with `after`). `ceiling(id, label)` builds the
 * ceiling scenario of either run.
 */
export function alternated(list: AreaScenario, ceilingId: string, ceilingLabel: string, ceiling: (id: string, label: string) => AreaScenario): AreaScenario[] {
  return [
    list,
    ceiling(ceilingId, ceilingLabel),
    { ...list, id: `${list.id}-again`, label: `${list.label} (again)`, after: ceilingId },
    { ...ceiling(`${ceilingId}-again`, `${ceilingLabel} (again)`), after: `${list.id}-again` },
  ]
}

export const BEST_OF_TWO = 'the best of two runs each (alternated: list, ceiling, list, ceiling)'

/** The best of a scenario's two runs (`id` and `id-again`): the higher req/s or the lower p99. */
export const bestRps = (results: Measurement[], id: string) => highest([resultOf(results, id)?.rps, resultOf(results, `${id}-again`)?.rps])
export const bestP99 = (results: Measurement[], id: string) => lowest([resultOf(results, id)?.p99, resultOf(results, `${id}-again`)?.p99])
