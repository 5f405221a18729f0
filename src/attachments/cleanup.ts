import type { Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { attachments } from '../db/schema.js'
import type { QueueDefinition } from '../jobs.js'

export const CLEANUP_QUEUE = 'attachments-cleanup'
/** Rows handled per statement: one batch is the most a run holds in memory. */
export const CLEANUP_BATCH = 200

type Doomed = Pick<typeof attachments.$inferSelect, 'id' | 'storageKey' | 'thumbKey'>

/**
 * Deletes what no one may read any more, bytes first, then rows: uploads never attached within
 * UPLOAD_PENDING_TTL_S (default 24 h), and the files of deleted conversations (marked `purge_at`
 * by the delete). Idempotent: deleting a missing object is not an error and a row goes only
 * after its objects are gone, so a run cut short (storage down, crash) is finished by the next.
 * Each batch is claimed with SKIP LOCKED, so two runs at once split the work.
 */
export async function cleanupAttachments(ctx: Ctx): Promise<{ pending: number; purged: number }> {
  const ttl = ctx.config.UPLOAD_PENDING_TTL_S
  const pending = await sweep(ctx, (sql) => sql<Doomed[]>`
    SELECT id, storage_key AS "storageKey", thumb_key AS "thumbKey" FROM attachments
    WHERE message_id IS NULL AND created_at < now() - make_interval(secs => ${ttl})
    ORDER BY created_at LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED`)
  const purged = await sweep(ctx, (sql) => sql<Doomed[]>`
    SELECT id, storage_key AS "storageKey", thumb_key AS "thumbKey" FROM attachments
    WHERE purge_at IS NOT NULL
    ORDER BY purge_at LIMIT ${CLEANUP_BATCH} FOR UPDATE SKIP LOCKED`)
  if (pending || purged) ctx.log.info({ pending, purged }, 'attachments cleaned up')
  return { pending, purged }
}

async function sweep(ctx: Ctx, select: (sql: Sql) => Promise<Doomed[]>): Promise<number> {
  let total = 0
  for (;;) {
    const n = await ctx.sql.begin(async (tx) => {
      const rows = await select(tx)
      for (const r of rows) {
        await ctx.storage.delete(r.storageKey)
        if (r.thumbKey) await ctx.storage.delete(r.thumbKey)
      }
      if (rows.length) await tx`DELETE FROM attachments WHERE id = ANY(${rows.map((r) => r.id)}::uuid[])`
      return rows.length
    })
    total += n
    if (n < CLEANUP_BATCH) return total
  }
}

/** The scheduled cleanup: a pg-boss cron (UPLOAD_CLEANUP_CRON, UTC) enqueues one job per tick. */
export const attachmentsCleanup: QueueDefinition<object> = {
  name: CLEANUP_QUEUE,
  options: () => ({ retryLimit: 3, retryDelay: 60, expireInSeconds: 900, deleteAfterSeconds: 24 * 3600 }),
  schedule: (config) => config.UPLOAD_CLEANUP_CRON,
  handle: async (ctx) => {
    await cleanupAttachments(ctx)
  },
}
