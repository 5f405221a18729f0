// A batch of mails imported in one transaction (docs/email.md "Inbound throughput"): a reply to a
// mail earlier in the same batch threads into it, counters and the place move once for the batch,
// a mail PostgreSQL refuses mid-batch costs only itself (the batch falls back to one transaction
// per mail), a lost lease writes nothing of the batch, and a killed reader restarted mid-import
// neither skips nor repeats.
import t from 'tap'
import { build, seedWorkspace, type TestContext } from '../helper.js'
import { rawMail, startDovecot } from '../support/dovecot.js'
import { waitFor } from '../support/processes.js'
import { importBatch, type ReaderPlace } from '../../src/email/inbound.js'
import type { App } from '../../src/app.js'
import { CHANNEL_ADDRESS, createEmailChannel, FAST_READER_ENV, inboundOf, readerProcess, stoppedReader } from './fixtures.js'

const mail = (id: string, from: string, extra: Record<string, string> = {}, body = `body ${id}`) =>
  Buffer.from(rawMail({ From: from, Subject: `Mail ${id}`, 'Message-ID': `<${id}@customer.example>`, ...extra }, body))

/** A channel whose reader is stopped: the test imports with a lease of its own. */
async function stoppedChannel(t: TestContext): Promise<{ app: App; place: ReaderPlace; next: () => number; workspaceId: string }> {
  const { app, ws, channelId, place, lastUid } = await stoppedReader(t, 'batch-test')
  await app.deps.sql`UPDATE email_mailboxes SET holder = 'batch-test', lease_expires_at = now() + interval '10 minutes' WHERE channel_id = ${channelId}`
  let uid = lastUid
  return { app, place, next: () => ++uid, workspaceId: ws.workspaceId }
}

const lastUid = async (app: App, channelId: string) =>
  Number((await app.deps.sql<{ u: string }[]>`SELECT last_uid AS u FROM email_mailboxes WHERE channel_id = ${channelId}`)[0]!.u)

t.test('a batch: a reply to a mail earlier in the batch threads into it; counters and the place move once', async (t) => {
  const { app, place, next, workspaceId } = await stoppedChannel(t)
  const { sql } = app.deps
  const batch = [
    { uid: next(), raw: mail('a1', 'alice@customer.example') },
    { uid: next(), raw: mail('a2', 'alice@customer.example', { 'In-Reply-To': '<a1@customer.example>' }) },
    { uid: next(), raw: mail('b1', 'Bob <bob@customer.example>') },
    // A colleague in Cc answering Bob's thread: the guest's message, saying who wrote it.
    { uid: next(), raw: mail('c1', 'Carol <carol@customer.example>', { References: '<x@elsewhere.example> <b1@customer.example>' }) },
    { uid: next(), raw: mail('auto', 'alice@customer.example', { 'Auto-Submitted': 'auto-replied', 'In-Reply-To': '<a1@customer.example>' }) },
    // The same Message-ID twice in one batch: stored once.
    { uid: next(), raw: mail('a1', 'alice@customer.example') },
  ]
  t.same(await importBatch(app.deps, place, batch), ['imported', 'threaded', 'imported', 'threaded', 'automatic', 'duplicate'])
  const rows = await inboundOf(app, place.channelId)
  // Unrelated conversations' messages may interleave (lanes); within a conversation, UID order.
  t.same(rows.map((r) => r.header).sort(), ['a1', 'a2', 'b1', 'c1'].map((id) => `${id}@customer.example`), 'each stored mail once')
  const conv = (h: string) => rows.find((r) => r.header === `${h}@customer.example`)!.conversationId
  t.equal(conv('a2'), conv('a1'), 'the reply threads into the conversation the same batch started')
  const order = rows.map((r) => r.header)
  t.ok(order.indexOf('a1@customer.example') < order.indexOf('a2@customer.example'), 'the reply after its first mail')
  t.equal(conv('c1'), conv('b1'), 'References from the newest, also within the batch')
  t.not(conv('a1'), conv('b1'))
  const messages = await sql<{ body: string; senderName: string }[]>`
    SELECT body, sender_name AS "senderName" FROM messages WHERE conversation_id = ${conv('c1')} ORDER BY created_at, id`
  t.match(messages[1]!.body, /^From: Carol <carol@customer\.example>\n\nbody c1/, "a colleague's reply says who wrote it")
  const convs = await sql<{ unread: number; status: string }[]>`
    SELECT unread_count AS unread, status FROM conversations WHERE channel_id = ${place.channelId} ORDER BY created_at`
  t.same(convs, [{ unread: 2, status: 'OPEN' }, { unread: 2, status: 'OPEN' }])
  const [counted] = await sql<{ conversations: number; messages: number }[]>`
    SELECT coalesce(sum(conversations), 0)::int AS conversations, coalesce(sum(messages), 0)::int AS messages
    FROM unread_counters WHERE workspace_id = ${workspaceId} AND scope = ${'channel:' + place.channelId}`
  t.same(counted, { conversations: 2, messages: 4 }, "the batch's counter delta was written (once, before its commit)")
  const [facts] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM metric_events WHERE conversation_id = ANY(${[conv('a1'), conv('b1')]}::uuid[]) AND kind = 'message_received'`
  t.equal(facts!.n, 4, 'each message its analytics fact')
  t.equal(await lastUid(app, place.channelId), batch[5]!.uid, 'the place is the batch’s last UID')

  // The same mails again (a mailbox rebuilt under a new generation would do this): nothing twice.
  const again = batch.map((m) => ({ uid: next(), raw: m.raw }))
  t.same(await importBatch(app.deps, place, again), ['duplicate', 'duplicate', 'duplicate', 'duplicate', 'automatic', 'duplicate'])
  t.equal((await inboundOf(app, place.channelId)).length, 4)
  t.equal(await lastUid(app, place.channelId), again[5]!.uid)
})

t.test('a mail PostgreSQL refuses mid-batch: the others are imported exactly once', async (t) => {
  const { app, place, next } = await stoppedChannel(t)
  const { sql } = app.deps
  // Hostile data the database refuses, in the middle of the batch's transaction (22023, a data exception).
  await sql.unsafe(`
    CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.body LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned' USING ERRCODE = '22023'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER refuse_poison BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_poison();`)
  t.teardown(() => sql.unsafe('DROP TRIGGER IF EXISTS refuse_poison ON messages').catch(() => {}))
  const batch = [
    { uid: next(), raw: mail('p1', 'dan@customer.example') },
    { uid: next(), raw: mail('p2', 'erin@customer.example', {}, 'poison') },
    { uid: next(), raw: mail('p3', 'dan@customer.example', { 'In-Reply-To': '<p1@customer.example>' }) },
    { uid: next(), raw: mail('p4', 'frank@customer.example') },
  ]
  t.same(await importBatch(app.deps, place, batch), ['imported', 'rejected', 'threaded', 'imported'], 'the batch fell back to one transaction per mail')
  const rows = await inboundOf(app, place.channelId)
  t.same(rows.map((r) => r.header), ['p1', 'p3', 'p4'].map((id) => `${id}@customer.example`), 'every other mail once')
  t.equal(rows[1]!.conversationId, rows[0]!.conversationId, 'the reply still threads')
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE channel_id = ${place.channelId}`
  t.equal(n, 2, "the refused mail's conversation was rolled back with it")
  const [guests] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM guests WHERE channel_id = ${place.channelId}`
  t.equal(guests!.n, 3, 'one guest per sender, none twice (the rolled-back batch made none)')
  t.equal(await lastUid(app, place.channelId), batch[3]!.uid, 'the place moved past the refused mail')
  const [files] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM attachments a JOIN conversations c ON c.id = a.conversation_id WHERE c.channel_id = ${place.channelId}`
  t.equal(files!.n, 3, 'one original.eml per stored mail')
})

t.test('a lease lost before the batch commits: nothing of it is written', async (t) => {
  const { app, place, next } = await stoppedChannel(t)
  const { sql } = app.deps
  const before = await lastUid(app, place.channelId)
  const batch = [
    { uid: next(), raw: mail('l1', 'gus@customer.example') },
    { uid: next(), raw: mail('l2', 'gus@customer.example', { 'In-Reply-To': '<l1@customer.example>' }) },
  ]
  await sql`UPDATE email_mailboxes SET holder = 'someone-else' WHERE channel_id = ${place.channelId}`
  t.same(await importBatch(app.deps, place, batch), ['lease-lost'])
  t.same(await inboundOf(app, place.channelId), [])
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE channel_id = ${place.channelId}`
  t.equal(n, 0)
  t.equal(await lastUid(app, place.channelId), before, 'the place did not move')
  // The holder again (another process after a takeover): the same batch, each mail once.
  await sql`UPDATE email_mailboxes SET holder = 'batch-test' WHERE channel_id = ${place.channelId}`
  t.same(await importBatch(app.deps, place, batch), ['imported', 'threaded'])
  t.equal((await inboundOf(app, place.channelId)).length, 2)
})

t.test('a reader killed mid-import: the next one neither skips nor repeats', async (t) => {
  const dv = await startDovecot([{ user: CHANNEL_ADDRESS, pass: 'secret' }])
  t.teardown(() => dv.stop())
  const setup = await build(t, { env: FAST_READER_ENV })
  const ws = await seedWorkspace(setup.app)
  await setup.app.deps.mailReaders.stop()
  const { sql } = setup.app.deps
  const channelId = await createEmailChannel(setup.app, ws, dv)
  const reader = await readerProcess(t, setup.app, setup.databaseUrl, channelId, 'batch')
  const start = await lastUid(setup.app, channelId)
  // Pause the reader while 400 mails arrive (half of them replies), then let it read: 4 batches.
  await sql`UPDATE channels SET active = false WHERE id = ${channelId}`
  const ids = Array.from({ length: 400 }, (_, i) => `k-${i}`)
  await dv.appendMany(
    ids.map((id, i) =>
      rawMail({ From: `s${i % 200}@customer.example`, Subject: `Mail ${id}`, 'Message-ID': `<${id}@customer.example>`, ...(i >= 200 ? { 'In-Reply-To': `<k-${i - 200}@customer.example>` } : {}) }, `body ${id}`),
    ),
  )
  await sql`UPDATE channels SET active = true WHERE id = ${channelId}`
  await waitFor(async () => (await inboundOf(setup.app, channelId)).length >= 1, 30_000, 20)
  await reader.kill()
  // What the killed process committed is exactly the mails up to its place: whole batches.
  const place = await lastUid(setup.app, channelId)
  const committed = (await inboundOf(setup.app, channelId)).map((m) => m.header)
  t.same([...committed].sort(), ids.slice(0, place - start).map((id) => `${id}@customer.example`).sort(), `after the kill: the mails up to the place (${place - start}), none beyond`)
  t.ok(place - start < ids.length, 'killed mid-import')

  const other = await build(t, { env: FAST_READER_ENV, databaseUrl: setup.databaseUrl })
  await waitFor(async () => (await inboundOf(other.app, channelId)).length >= ids.length, 60_000, 100)
  await new Promise((r) => setTimeout(r, 1000))
  const rows = await inboundOf(other.app, channelId)
  t.same(rows.map((m) => m.header).sort(), ids.map((id) => `${id}@customer.example`).sort(), 'each mail once')
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE channel_id = ${channelId}`
  t.equal(n, 200, 'every reply threaded into its conversation')
  const [misordered] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM message_emails me
    WHERE me.channel_id = ${channelId} AND me.in_reply_to IS NOT NULL
      AND me.message_id = (SELECT f.id FROM messages f WHERE f.conversation_id = me.conversation_id ORDER BY f.created_at, f.id LIMIT 1)`
  t.equal(misordered!.n, 0, "each reply after its conversation's first mail")
  t.equal(await lastUid(other.app, channelId), start + ids.length)
})
