// The mailbox reader across processes (API.md section 19): old mail is not imported, a restart
// neither skips nor repeats, two replicas import each mail once, and a killed lease holder's
// mailbox is taken over by another process.
import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { rawMail, startDovecot } from '../support/dovecot.js'
import { waitFor } from '../support/processes.js'
import { importMail } from '../../src/email/inbound.js'
import { CHANNEL_ADDRESS, createEmailChannel, FAST_READER_ENV, inboundOf, readerProcess, readerReady, stoppedReader } from './fixtures.js'

const mail = (id: string, from = 'customer@customer.example') => rawMail({ From: from, Subject: `Mail ${id}`, 'Message-ID': `<${id}@customer.example>` }, `body ${id}`)

t.test('old mail is not imported; a restart neither skips nor repeats', async (t) => {
  const dv = await startDovecot([{ user: CHANNEL_ADDRESS, pass: 'secret' }])
  t.teardown(() => dv.stop())
  for (let i = 0; i < 3; i++) await dv.append(mail(`old-${i}`))
  // INTERNALDATE has whole seconds: the channel is created in a later second than the old mail.
  await new Promise((r) => setTimeout(r, 1100))

  const first = await build(t, { env: FAST_READER_ENV })
  const ws = await seedWorkspace(first.app)
  const channelId = await createEmailChannel(first.app, ws, dv)
  await readerReady(first.app, channelId)
  await dv.append(mail('new-1'))
  await waitFor(async () => (await inboundOf(first.app, channelId)).length >= 1, 10_000, 100)
  t.same((await inboundOf(first.app, channelId)).map((m) => m.header), ['new-1@customer.example'], 'only the mail after the channel was created')

  await first.app.close()
  for (let i = 2; i <= 5; i++) await dv.append(mail(`new-${i}`))

  const second = await build(t, { env: FAST_READER_ENV, databaseUrl: first.databaseUrl })
  await waitFor(async () => (await inboundOf(second.app, channelId)).length >= 5, 15_000, 100)
  // A little longer: nothing more may come.
  await new Promise((r) => setTimeout(r, 1000))
  t.same(
    (await inboundOf(second.app, channelId)).map((m) => m.header),
    ['new-1', 'new-2', 'new-3', 'new-4', 'new-5'].map((id) => `${id}@customer.example`),
    'after the restart: each mail once, in order, none of the old ones',
  )
  const [place] = await second.app.deps.sql<{ lastUid: number }[]>`SELECT last_uid AS "lastUid" FROM email_mailboxes WHERE channel_id = ${channelId}`
  t.equal(Number(place!.lastUid), 8, 'the place is the last UID (3 old + 5 new)')
})

t.test('two replicas: each mail imported once, by the lease holder', async (t) => {
  const dv = await startDovecot([{ user: CHANNEL_ADDRESS, pass: 'secret' }])
  t.teardown(() => dv.stop())
  const a = await build(t, { env: FAST_READER_ENV })
  const b = await build(t, { env: FAST_READER_ENV, databaseUrl: a.databaseUrl })
  const ws = await seedWorkspace(a.app)
  const channelId = await createEmailChannel(a.app, ws, dv)
  await readerReady(a.app, channelId)
  const readers = [a.app.deps.mailReaders, b.app.deps.mailReaders]
  await waitFor(() => readers.filter((r) => r.held().includes(channelId)).length === 1, 5000, 50)
  // Both keep running their lease rounds while mail arrives.
  const ids = Array.from({ length: 20 }, (_, i) => `r-${i}`)
  for (const id of ids) await dv.append(mail(id, `sender${Number(id.slice(2)) % 4}@customer.example`))
  await waitFor(async () => (await inboundOf(a.app, channelId)).length >= ids.length, 15_000, 100)
  await new Promise((r) => setTimeout(r, 1000))
  const got = (await inboundOf(a.app, channelId)).map((m) => m.header)
  t.equal(got.length, ids.length, 'no mail twice')
  t.same([...got].sort(), ids.map((id) => `${id}@customer.example`).sort(), 'every mail once')
  t.equal(readers.filter((r) => r.held().includes(channelId)).length, 1, 'one process holds the mailbox')
  const [conv] = await a.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE channel_id = ${channelId}`
  t.equal(conv!.n, ids.length, 'each mail its own conversation (no threading headers)')
})

t.test('a killed lease holder: another process takes the mailbox over', async (t) => {
  const dv = await startDovecot([{ user: CHANNEL_ADDRESS, pass: 'secret' }])
  t.teardown(() => dv.stop())
  const setup = await build(t, { env: FAST_READER_ENV })
  const ws = await seedWorkspace(setup.app)
  // The channel is read first by a server process of its own (started before any in-process reader).
  await setup.app.deps.mailReaders.stop()
  const channelId = await createEmailChannel(setup.app, ws, dv)

  const reader = await readerProcess(t, setup.app, setup.databaseUrl, channelId, 'kill')
  const { sql } = setup.app.deps
  const holderOf = async () => (await sql<{ holder: string | null }[]>`SELECT holder FROM email_mailboxes WHERE channel_id = ${channelId}`)[0]?.holder ?? null
  const childHolder = await holderOf()
  t.match(childHolder, new RegExp(`^${reader.pid}-`), 'the server process holds the lease')
  await dv.append(mail('before-kill'))
  await waitFor(async () => (await inboundOf(setup.app, channelId)).length === 1, 10_000, 100)

  await reader.kill()
  const killedAt = Date.now()
  // Another replica: it finds the lease taken and takes it once expired.
  const other = await build(t, { env: FAST_READER_ENV, databaseUrl: setup.databaseUrl })
  await dv.append(mail('after-kill'))
  await waitFor(async () => (await inboundOf(setup.app, channelId)).length === 2, 20_000, 100)
  const took = Date.now() - killedAt
  t.ok(took < 10_000, `the new holder imported within ${took} ms (lease 3 s here; 30 s + an 8 s round by default, within 60 s)`)
  t.equal(await holderOf(), other.app.deps.mailReaders.holder, 'the other process holds the lease now')
  t.same((await inboundOf(setup.app, channelId)).map((m) => m.header), ['before-kill@customer.example', 'after-kill@customer.example'])
})

t.test('fencing: a process whose lease is gone cannot import', async (t) => {
  const { app, channelId, place, lastUid } = await stoppedReader(t, 'paused-process')
  const { sql } = app.deps
  const uid = lastUid + 1
  // Another process holds the lease: the paused former holder's import rolls back.
  await sql`UPDATE email_mailboxes SET holder = 'someone-else', lease_expires_at = now() + interval '1 minute' WHERE channel_id = ${channelId}`
  t.equal(await importMail(app.deps, place, uid, Buffer.from(mail('fenced'))), 'lease-lost')
  // Its own lease, but expired: the same.
  await sql`UPDATE email_mailboxes SET holder = 'paused-process', lease_expires_at = now() - interval '1 second' WHERE channel_id = ${channelId}`
  t.equal(await importMail(app.deps, place, uid, Buffer.from(mail('fenced'))), 'lease-lost')
  t.same(await inboundOf(app, channelId), [], 'nothing was written')
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE channel_id = ${channelId}`
  t.equal(n, 0, 'no conversation either')
  // Holding it: imported, and the place moved.
  await sql`UPDATE email_mailboxes SET lease_expires_at = now() + interval '1 minute' WHERE channel_id = ${channelId}`
  t.equal(await importMail(app.deps, place, uid, Buffer.from(mail('fenced'))), 'imported')
  t.equal(await importMail(app.deps, place, uid, Buffer.from(mail('fenced'))), 'lease-lost', 'the place never moves back: the same UID again is refused')
  t.equal(await importMail(app.deps, place, uid + 1, Buffer.from(mail('fenced'))), 'duplicate', 'the same mail under a later UID: a duplicate')
  const [after] = await sql<{ lastUid: string }[]>`SELECT last_uid AS "lastUid" FROM email_mailboxes WHERE channel_id = ${channelId}`
  t.equal(Number(after!.lastUid), uid + 1, 'the duplicate moved the place')
  t.equal((await inboundOf(app, channelId)).length, 1, 'stored once')
})
