// Reads on a streaming replica (API.md section 20): a PostgreSQL 15 primary and a standby made
// with pg_basebackup -R, both started here. Searches, analytics, the visitors list read the
// replica while it keeps up; a paused replay (lag) or a stopped replica sends them back to the
// primary, /health says so and stays 200. Opt-in locally: PARLEY_ENGINE_TESTS=1.
import { join } from 'node:path'
import t from 'tap'
import postgres from 'postgres'
import { runMigrations } from '../../src/db/migrate.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { engineSkip, PG_BIN, sleep, startPrimaryAndReplica, waitFor } from './engines.js'

const skip = engineSkip([join(PG_BIN, 'initdb'), join(PG_BIN, 'pg_basebackup')])
if (skip) t.comment(skip)

t.test('searches, analytics and the visitors list read the replica while it keeps up', { skip }, async (t) => {
  const { primary, replica } = await startPrimaryAndReplica(t)
  await runMigrations(primary.url('parley'))
  const onReplica = postgres(replica.url('parley'), { max: 1, onnotice: () => {} })
  const onPrimary = postgres(primary.url('parley'), { max: 1, onnotice: () => {} })
  t.teardown(() => Promise.all([onReplica.end({ timeout: 1 }), onPrimary.end({ timeout: 1 })]))
  const env = (lag: string) => ({ DATABASE_READ_URL: replica.url('parley'), DATABASE_READ_MAX_LAG_S: lag, JOBS_WORKER: 'false' })
  // Two API processes on the same engines: one tolerates a minute of lag, one a second.
  const patient = await build(t, { databaseUrl: primary.url('parley'), env: env('60') })
  const strict = await build(t, { databaseUrl: primary.url('parley'), env: env('1') })
  const { app } = patient
  const health = async (a: typeof app) => (await a.inject({ method: 'GET', url: '/health' })).json()
  const caughtUp = () =>
    waitFor('the replica to replay everything', async () => {
      const [{ lsn }] = await onPrimary<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`
      const [{ ok }] = await onReplica<{ ok: boolean }[]>`SELECT pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn AS ok`
      return ok
    })

  const ws = await seedWorkspace(app)
  const gina = await seedGuest(app, ws, 'Gina Guest')
  const conv = await app.inject({ method: 'POST', url: '/conversations', headers: gina.headers, payload: { channelId: gina.channelId, guestId: gina.guestId } })
  t.equal(conv.statusCode, 201)
  const id = conv.json().id
  t.equal((await app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers: gina.headers, payload: { body: 'my parcel is late' } })).statusCode, 201)
  await caughtUp()
  await waitFor('replica online', async () => (await health(app)).replica === 'online' && (await health(strict.app)).replica === 'online')
  t.match(await health(app), { status: 'ok', database: 'online', replica: 'online' })

  const search = async (a: typeof app, q: string) => {
    const res = await a.inject({ method: 'GET', url: `/conversations/search?q=${q}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    return res.json().data.map((c: { id: string }) => c.id) as string[]
  }
  const visitors = async (a: typeof app) => {
    const res = await a.inject({ method: 'GET', url: '/visitors?limit=50', headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    return res.json().data.map((v: { name: string }) => v.name).sort() as string[]
  }
  const created = async (a: typeof app) => {
    const res = await a.inject({ method: 'GET', url: '/analytics/summary', headers: ws.owner.headers })
    t.equal(res.statusCode, 200, 'analytics summary')
    return res.json().current.conversationsCreated as number
  }
  t.same(await search(app, 'parcel'), [id])
  t.equal(await created(app), 1)

  await t.test('an idle primary means no lag, even with replay paused', async (t) => {
    await onReplica`SELECT pg_wal_replay_pause()`
    await sleep(2500)
    t.match(await health(strict.app), { status: 'ok', replica: 'online' })
    await onReplica`SELECT pg_wal_replay_resume()`
  })

  await t.test('writes the replica has not replayed: the patient process reads the replica, the strict one the primary', async (t) => {
    await onReplica`SELECT pg_wal_replay_pause()`
    const hugo = await seedGuest(app, ws, 'Hugo Late')
    const conv2 = await app.inject({ method: 'POST', url: '/conversations', headers: hugo.headers, payload: { channelId: hugo.channelId, guestId: hugo.guestId } })
    const id2 = conv2.json().id
    t.equal((await app.inject({ method: 'POST', url: `/conversations/${id2}/messages`, headers: hugo.headers, payload: { body: 'zanzibar shipment' } })).statusCode, 201)
    // Read-your-write: the conversation itself is read from the primary.
    const own = await app.inject({ method: 'GET', url: `/conversations/${id2}/messages`, headers: ws.agent.headers })
    t.equal(own.statusCode, 200)
    t.match(own.json().data, [{ body: 'zanzibar shipment' }], 'a conversation just written reads back at once')
    // Within a minute of lag the patient process still serves these reads from the replica,
    // which has not replayed them: proof of where they go.
    t.same(await search(app, 'zanzibar'), [], 'search answered by the replica')
    t.same(await visitors(app), ['Gina Guest'], 'visitors list answered by the replica')
    t.equal(await created(app), 1, 'analytics answered by the replica')
    // Past one second of lag the strict process reads the primary and says the replica lags.
    await waitFor('lagging', async () => (await health(strict.app)).replica === 'lagging', 10_000)
    t.match(await health(strict.app), { status: 'ok', database: 'online', replica: 'lagging' })
    t.same(await search(strict.app, 'zanzibar'), [id2], 'search answered by the primary')
    t.same(await visitors(strict.app), ['Gina Guest', 'Hugo Late'])
    t.equal(await created(strict.app), 2)

    await onReplica`SELECT pg_wal_replay_resume()`
    await caughtUp()
    await waitFor('online again', async () => (await health(strict.app)).replica === 'online', 10_000)
    t.same(await search(app, 'zanzibar'), [id2], 'replayed: the replica has it')
  })

  await t.test('a stopped replica: reads go to the primary, /health says down and stays 200, then online again', async (t) => {
    await onReplica.end({ timeout: 1 })
    await replica.stop()
    // The next search may race the check: it falls back on the connection error by itself.
    t.same(await search(app, 'parcel'), [id], 'search answered by the primary')
    t.match(await health(app), { status: 'ok', database: 'online', replica: 'down' })
    const res = await app.inject({ method: 'GET', url: '/health' })
    t.equal(res.statusCode, 200, 'the probe does not fail')
    t.same(await visitors(app), ['Gina Guest', 'Hugo Late'])
    t.equal(await created(app), 2)
    await replica.start()
    await waitFor('online after restart', async () => (await health(app)).replica === 'online', 20_000)
    t.same(await search(app, 'parcel'), [id])
  })
})

t.test('without DATABASE_READ_URL /health has no replica field (runs without engines)', async (t) => {
  const { app } = await build(t)
  const body = (await app.inject({ method: 'GET', url: '/health' })).json()
  t.equal(body.status, 'ok')
  t.notOk('replica' in body)
})
