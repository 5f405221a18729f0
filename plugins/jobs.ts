import fp from 'fastify-plugin'
import { PgBoss, type Db as BossDb } from 'pg-boss'
import type postgres from 'postgres'
import { TRANSCRIPT_QUEUE, transcriptQueueOptions, transcriptWorker } from '../src/transcripts/worker.js'

export interface Jobs {
  boss: PgBoss
  /**
   * pg-boss's executor over a postgres.js transaction: a `send(..., { db })` through it is an
   * INSERT inside that transaction, so the job exists if and only if the transaction commits.
   */
  executor(tx: postgres.Sql | postgres.TransactionSql): BossDb
  /** Wakes this process's worker of `queue` at once (after a commit) instead of at its next poll. */
  wake(queue: string): void
}

declare module 'fastify' {
  interface FastifyInstance {
    jobs: Jobs
  }
}

/**
 * Durable jobs in PostgreSQL with pg-boss: its own schema (`pgboss`) in DATABASE_URL, its own
 * small pg pool. pg-boss installs or migrates its schema at start (under its advisory lock, so
 * replicas do not race). With JOBS_WORKER (default) this process also runs the workers; set it
 * to false to run API-only replicas and workers elsewhere.
 */
export default fp(
  async (app) => {
    const boss = new PgBoss({
      connectionString: app.config.DATABASE_URL,
      max: 3,
      application_name: 'parley-jobs',
      schedule: false,
    })
    boss.on('error', (err) => app.log.error({ err }, 'pg-boss error'))
    await boss.start()
    await boss.createQueue(TRANSCRIPT_QUEUE, transcriptQueueOptions(app.config))
    // createQueue leaves an existing queue as it is: apply changed retry settings too.
    await boss.updateQueue(TRANSCRIPT_QUEUE, transcriptQueueOptions(app.config))

    const workers = new Map<string, string>()
    if (app.config.JOBS_WORKER) {
      const id = await boss.work(
        TRANSCRIPT_QUEUE,
        { includeMetadata: true, batchSize: 1, pollingIntervalSeconds: app.config.JOBS_POLL_INTERVAL_S },
        transcriptWorker(app),
      )
      workers.set(TRANSCRIPT_QUEUE, id)
    }

    app.decorate('jobs', {
      boss,
      executor: (tx) => ({
        executeSql: async (text: string, values?: unknown[]) => ({
          rows: await tx.unsafe(text, (values ?? []) as postgres.ParameterOrJSON<never>[]),
        }),
      }),
      wake: (queue) => {
        const id = workers.get(queue)
        if (id) boss.notifyWorker(id)
      },
    })

    // preClose: stop taking jobs and let an active one finish while the database pool is still open.
    app.addHook('preClose', async () => {
      await boss.stop({ graceful: true, timeout: 15000 })
    })
  },
  { name: 'jobs', dependencies: ['config', 'db', 'mail'] },
)
