// Parley behind Debian's PgBouncer 1.18 in transaction mode (API.md section 20): a started
// server migrates through DATABASE_MIGRATION_URL, and the newcomer flow, a durable job and a
// webhook's exactly-once all work through the pooler. Opt-in locally: PARLEY_ENGINE_TESTS=1.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import postgres from 'postgres'
import { build, memberToken, testEnv } from '../helper.js'
import { ADMIN_URL, createTestDatabase, databaseUrl } from '../setup/database.js'
import { eventA, postA, providerAEnv, uniq } from '../billing/fixtures.js'
import { fast, startSmtp } from '../transcripts/smtp.js'
import { engineSkip, freePort, startPgBouncer, stop, waitFor } from './engines.js'

const skip = engineSkip(['pgbouncer'])
if (skip) t.comment(skip)

t.test('npm start behind PgBouncer migrates through DATABASE_MIGRATION_URL and serves', { skip }, async (t) => {
  // An empty database: the pooler serves it only under the alias "pooled", so migrations (and
  // their CREATE DATABASE check) sent to DATABASE_URL would fail: they must take the session URL.
  const name = `parley_pgb_${randomBytes(5).toString('hex')}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  t.teardown(async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })
  const bouncer = await startPgBouncer(t, databaseUrl(name))
  const port = await freePort()
  const env = testEnv({
    DATABASE_URL: bouncer.url,
    DATABASE_MIGRATION_URL: databaseUrl(name),
    DATABASE_POOLER: 'transaction',
    MIGRATE_ON_START: 'true',
    PORT: String(port),
    HOST: '127.0.0.1',
    REDIS_PREFIX: `t:${randomBytes(6).toString('hex')}:`,
  })
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  server.stderr.on('data', (d) => (stderr += d))
  t.teardown(() => stop(server))
  await waitFor('the server behind pgbouncer', async () => {
    if (server.exitCode !== null) throw new Error(`server exited: ${stderr}`)
    return (await fetch(`http://127.0.0.1:${port}/health`)).status === 200
  }, 40_000, 200)
  const [{ n }] = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_database WHERE datname = 'pooled'`
  t.equal(n, 0, 'no database was created under the pooler alias')
  const token = await memberToken(`idp|${randomBytes(6).toString('hex')}`, { name: 'Nora Newcomer', email: 'nora@example.test' })
  const created = await fetch(`http://127.0.0.1:${port}/workspaces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Pooled' }),
  })
  t.equal(created.status, 201, 'a workspace is created through the pooler')
})

t.test('the newcomer flow, a durable job and exactly-once webhooks through PgBouncer', { skip }, async (t) => {
  const db = await createTestDatabase()
  t.teardown(db.drop)
  // A small server pool and many clients: statements and settings of one transaction land on
  // whatever server connection is free, as in production.
  const bouncer = await startPgBouncer(t, db.url, { poolSize: 3 })
  const smtp = await startSmtp()
  t.teardown(smtp.close)
  const env = {
    ...fast,
    ...providerAEnv,
    DATABASE_POOLER: 'transaction',
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    MAIL_FROM: 'Parley <support@parley.test>',
  }
  const { app } = await build(t, { databaseUrl: bouncer.url, env, captureLogs: false })
  const second = await build(t, { databaseUrl: bouncer.url, env: { ...env, JOBS_WORKER: 'false' }, captureLogs: true })

  // Bootstrap: a member creates a workspace and a channel; a visitor starts a session.
  const token = await memberToken(`idp|${randomBytes(6).toString('hex')}`, { name: 'Nora Newcomer', email: 'nora@example.test' })
  const ws = await app.inject({ method: 'POST', url: '/workspaces', headers: { authorization: `Bearer ${token}` }, payload: { name: 'Pooled' } })
  t.equal(ws.statusCode, 201)
  const member = { authorization: `Bearer ${token}`, 'x-workspace-id': ws.json().id }
  const channel = await app.inject({ method: 'POST', url: '/channels', headers: member, payload: { name: 'Website' } })
  t.equal(channel.statusCode, 201)
  const boot = await app.inject({ method: 'POST', url: '/auth', payload: { channelId: channel.json().id, name: 'Gina Guest', email: 'gina@example.test' } })
  t.equal(boot.statusCode, 201)
  const visitor = { 'x-visitor-session': boot.json().visitorSession }

  // Conversations and messages, many at once across the two replicas.
  const conversations = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      (i % 2 ? second.app : app).inject({ method: 'POST', url: '/conversations', headers: visitor, payload: { channelId: channel.json().id, guestId: boot.json().guestId } }),
    ),
  )
  t.same(conversations.map((r) => r.statusCode), Array(6).fill(201))
  const ids = conversations.map((r) => r.json().id as string)
  const sent = await Promise.all(
    ids.flatMap((id, i) => [
      app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers: visitor, payload: { body: `parcel number${i} never arrived` } }),
      second.app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers: member, payload: { body: `looking into number${i}` } }),
    ]),
  )
  t.same(sent.map((r) => r.statusCode), Array(sent.length).fill(201), 'every message is stored')
  const list = await app.inject({ method: 'GET', url: '/conversations?limit=50', headers: member })
  t.equal(list.statusCode, 200)
  t.equal(list.json().data.length, 6)

  // Search runs with its settings per transaction (PgBouncer refuses them as startup options).
  const searches = await Promise.all(['parcel', 'number3', 'Gina', 'arrived'].map((q) => app.inject({ method: 'GET', url: `/conversations/search?q=${q}`, headers: member })))
  t.same(searches.map((r) => r.statusCode), [200, 200, 200, 200])
  t.equal(searches[0]!.json().data.length, 6, 'a word in every conversation finds all six')
  t.same(searches[1]!.json().data.map((c: { id: string }) => c.id), [ids[3]], 'a rare word finds its one conversation')

  // A durable job: the transcript mail goes out through pg-boss on the pooler.
  const mail = await app.inject({ method: 'POST', url: `/conversations/${ids[0]}/transcript`, headers: member, payload: {} })
  t.equal(mail.statusCode, 200)
  await waitFor('the transcript mail', async () => smtp.mails.length === 1, 20_000)
  t.same(smtp.mails[0]!.envelopeTo, ['gina@example.test'])
  t.match(smtp.mails[0]!.text, /parcel number0 never arrived/)

  // A webhook delivered 20 times at once to two replicas is processed once.
  const id = uniq('evt')
  const body = eventA('invoice.paid', { id: 'in_pooled', amount_paid: 4200, currency: 'usd', metadata: { workspaceId: ws.json().id } }, { id })
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => postA(i % 2 ? second.app : app, body)))
  t.same(results.map((r) => r.statusCode), Array(20).fill(200))
  t.same(await app.deps.sql`SELECT count(*)::int AS n FROM webhook_events WHERE event_id = ${id}`, [{ n: 1 }])
  t.same(await app.deps.sql`SELECT amount::int AS amount FROM payments WHERE workspace_id = ${ws.json().id}`, [{ amount: 4200 }], 'one ledger row')
})

t.test('reconcile (batches, row locks, lock_timeout) and the CSV export (keyset batches) through PgBouncer', { skip }, async (t) => {
  // Issue 31: neither holds session state: every step is one statement or one short transaction
  // (SET LOCAL only), so each may land on any server connection of a pool of 2.
  const db = await createTestDatabase()
  t.teardown(db.drop)
  const bouncer = await startPgBouncer(t, db.url, { poolSize: 2 })
  const { app } = await build(t, { databaseUrl: bouncer.url, env: { DATABASE_POOLER: 'transaction', RECONCILE_BATCH: '10', JOBS_WORKER: 'false' } })
  const { seedWorkspace, seedGuest } = await import('../helper.js')
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const ids: string[] = []
  for (let i = 0; i < 35; i++) {
    const c = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: guest.channelId, guestId: guest.guestId } })
    ids.push(c.json().id)
    if (i % 2) await app.inject({ method: 'POST', url: `/conversations/${c.json().id}/messages`, headers: guest.headers, payload: { body: `hello ${i}` } })
  }
  await app.deps.sql`UPDATE conversations SET unread_count = unread_count + 3 WHERE id = ANY(${ids.filter((_, i) => i % 7 === 0)}::uuid[])`
  await app.deps.sql`UPDATE unread_counters SET conversations = conversations + 2 WHERE workspace_id = ${ws.workspaceId} AND scope = 'all'`
  const rec = await Promise.all([0, 1].map(() => app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })))
  t.same(rec.map((r) => r.statusCode), [200, 200], 'two reconciles at once through a pool of 2')
  t.ok(rec.some((r) => r.json().corrected), 'the drift was repaired')
  const again = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })
  t.equal(again.json().corrected, false)
  t.equal(again.json().after.total, 17, '17 conversations with an unread message')
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  const csv = await app.inject({ url: `/analytics/conversations.csv?from=${day(Date.now() - 86_400_000)}&to=${day(Date.now() + 86_400_000)}`, headers: ws.owner.headers })
  t.equal(csv.statusCode, 200)
  t.equal(csv.body.split('\r\n').filter(Boolean).length, 36, 'header and 35 rows')
})
