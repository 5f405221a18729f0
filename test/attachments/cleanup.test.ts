import t from 'tap'
import { cleanupAttachments, CLEANUP_QUEUE } from '../../src/attachments/cleanup.js'
import { contextFor } from '../../src/context.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'
import { waitFor } from '../support/processes.js'
import { DRIVERS, storageEnv, uploadForm } from './fixtures.js'

/**
 * The scheduled cleanup (API.md section 10): uploads never attached go after
 * UPLOAD_PENDING_TTL_S (24 h by default; 2 s here), the files of deleted conversations at the
 * next run, bytes and rows; a second run finds nothing; attached files of live conversations stay.
 */
for (const driver of DRIVERS) {
  t.test(`cleanup on ${driver} storage`, async (t) => {
    const storage = await storageEnv(t, driver)
    const { app } = await build(t, { env: { ...storage.env, UPLOAD_PENDING_TTL_S: '2', JOBS_POLL_INTERVAL_S: '0.5' } })
    const ws = await seedWorkspace(app)
    const guest = await seedGuest(app, ws)
    const live = await startConversation(app, guest)
    const doomed = await startConversation(app, guest)
    const upload = async (conversationId: string, text: string) => {
      const form = uploadForm(conversationId, { filename: `${text}.txt`, data: Buffer.from(text) })
      const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...guest.headers, ...form.headers }, payload: form.payload })
      return res.json()
    }
    const attach = (conversationId: string, id: string) =>
      app.inject({ method: 'POST', url: `/conversations/${conversationId}/messages`, headers: guest.headers, payload: { body: 'file', attachmentIds: [id] } })
    const keyOf = async (id: string) => (await app.deps.sql`SELECT storage_key FROM attachments WHERE id = ${id}`)[0]?.storage_key as string | undefined

    const pending = await upload(live.id, 'pending')
    const kept = await upload(live.id, 'kept')
    await attach(live.id, kept.id)
    const gone = await upload(doomed.id, 'gone')
    await attach(doomed.id, gone.id)
    const keys = { pending: (await keyOf(pending.id))!, kept: (await keyOf(kept.id))!, gone: (await keyOf(gone.id))! }
    const ctx = contextFor(app.deps, { kind: 'system' })

    t.test('a fresh pending upload is not touched; a deleted conversation\'s files go at once', async (t) => {
      t.equal((await app.inject({ method: 'DELETE', url: `/conversations/${doomed.id}`, headers: ws.owner.headers })).statusCode, 204)
      t.equal((await app.inject({ url: gone.url, headers: ws.owner.headers })).statusCode, 404, '404 at once')
      t.same(await cleanupAttachments(ctx), { pending: 0, purged: 1 })
      t.equal(await keyOf(gone.id), undefined, 'row gone')
      t.equal(await app.deps.storage.exists(keys.gone), false, 'bytes gone')
      t.equal(await app.deps.storage.exists(keys.pending), true, 'the fresh pending upload stays')
    })

    t.test('after UPLOAD_PENDING_TTL_S the pending upload goes; attached files stay; a second run finds nothing', async (t) => {
      await new Promise((r) => setTimeout(r, 2100))
      t.same(await cleanupAttachments(ctx), { pending: 1, purged: 0 })
      t.equal(await keyOf(pending.id), undefined)
      t.equal(await app.deps.storage.exists(keys.pending), false)
      t.equal(await app.deps.storage.exists(keys.kept), true, 'attached files stay')
      t.equal((await app.inject({ url: kept.url, headers: guest.headers })).statusCode, 200)
      t.same(await cleanupAttachments(ctx), { pending: 0, purged: 0 }, 'idempotent')
    })

    t.test('bytes already missing (a run cut short) do not stop the row going', async (t) => {
      const half = await upload(live.id, 'half')
      const key = (await keyOf(half.id))!
      await app.deps.storage.delete(key)
      await app.deps.sql`UPDATE attachments SET created_at = created_at - interval '1 hour' WHERE id = ${half.id}`
      t.same(await cleanupAttachments(ctx), { pending: 1, purged: 0 })
      t.equal(await keyOf(half.id), undefined)
    })

    t.test('the durable job: scheduled with pg-boss, and a job on its queue runs the cleanup', async (t) => {
      const schedules = await app.deps.jobs.boss.getSchedules(CLEANUP_QUEUE)
      t.equal(schedules.length, 1, 'a cron schedule exists')
      t.equal(schedules[0]!.cron, app.deps.config.UPLOAD_CLEANUP_CRON)
      const old = await upload(live.id, 'old')
      await app.deps.sql`UPDATE attachments SET created_at = created_at - interval '25 hours' WHERE id = ${old.id}`
      const key = (await keyOf(old.id))!
      const jobId = await app.deps.jobs.boss.send(CLEANUP_QUEUE, {})
      await waitFor(async () => (await app.deps.jobs.boss.getJobById(CLEANUP_QUEUE, jobId!))?.state === 'completed', 15_000)
      t.equal(await keyOf(old.id), undefined)
      t.equal(await app.deps.storage.exists(key), false)
    })
  })
}
