import { PgBoss, type JobWithMetadata, type Queue, type SendOptions } from 'pg-boss'
import type { Config } from './config.js'
import { contextFor, type Ctx, type Deps } from './context.js'
import type { Log } from './logger.js'
import type { Parameter, Sql } from './db/client.js'

/** One durable job queue of an area: its name, retry policy and handler. Listed in src/queues.ts. */
export interface QueueDefinition<T extends object = object> {
  name: string
  options(config: Config): Omit<Queue, 'name'>
  /** A cron expression (UTC): pg-boss enqueues a job on this queue at each tick (durable, once across replicas). */
  schedule?(config: Config): string
  /** Handles one job with a system caller's context; throwing makes pg-boss retry it per `options`. */
  handle(ctx: Ctx, job: JobWithMetadata<T>): Promise<void>
}

export interface Jobs {
  /**
   * Enqueues `data` on `queue` inside the caller's transaction `tx`: the job exists if and only if
   * the transaction commits. Resolves to the job id (null when a singleton key already holds one).
   */
  send(tx: Sql, queue: string, data: object, options?: Omit<SendOptions, 'db'>): Promise<string | null>
  /** Wakes this process's worker of `queue` at once (after a commit) instead of at its next poll. */
  wake(queue: string): void
  /** pg-boss itself (tests look jobs up). */
  readonly boss: PgBoss
}

export interface JobsRuntime {
  jobs: Jobs
  /** Starts a worker per queue in this process (JOBS_WORKER). */
  startWorkers(deps: Deps): Promise<void>
  /** Stops taking jobs and lets an active one finish (up to 15 s). */
  stop(): Promise<void>
}

/**
 * Durable jobs in PostgreSQL with pg-boss: its own schema (`pgboss`) in DATABASE_URL, its own
 * small pg pool. pg-boss installs or migrates its schema at start (under its advisory lock, so
 * replicas do not race); each queue is created, or updated to the configured retry policy.
 */
export async function createJobs(config: Config, log: Log, queues: readonly QueueDefinition[]): Promise<JobsRuntime> {
  // The cron clock runs where the workers run; any number of processes may run it (pg-boss
  // enqueues each tick once).
  const boss = new PgBoss({ connectionString: config.DATABASE_URL, max: 3, application_name: 'parley-jobs', schedule: config.JOBS_WORKER })
  boss.on('error', (err) => log.error({ err }, 'pg-boss error'))
  await boss.start()
  for (const q of queues) {
    await boss.createQueue(q.name, q.options(config))
    // createQueue leaves an existing queue as it is: apply changed retry settings too.
    await boss.updateQueue(q.name, q.options(config))
    if (q.schedule) await boss.schedule(q.name, q.schedule(config), {}, { tz: 'UTC' })
  }
  const workers = new Map<string, string>()
  const jobs: Jobs = {
    boss,
    send: (tx, queue, data, options = {}) =>
      boss.send(queue, data, {
        ...options,
        // pg-boss's executor over the transaction: the INSERT of the job runs inside it.
        db: {
          executeSql: async (text: string, values?: unknown[]) => ({
            rows: await tx.unsafe(text, (values ?? []) as Parameter[]),
          }),
        },
      }),
    wake: (queue) => {
      const id = workers.get(queue)
      if (id) boss.notifyWorker(id)
    },
  }
  return {
    jobs,
    async startWorkers(deps) {
      for (const q of queues) {
        const id = await boss.work<object>(
          q.name,
          { includeMetadata: true, batchSize: 1, pollingIntervalSeconds: config.JOBS_POLL_INTERVAL_S },
          async (batch) => {
            for (const job of batch) await q.handle(contextFor(deps, { kind: 'system' }), job)
          },
        )
        workers.set(q.name, id)
      }
    },
    stop: () => boss.stop({ graceful: true, timeout: 15000 }),
  }
}
