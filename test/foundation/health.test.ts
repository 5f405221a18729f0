import t from 'tap'
import { build } from '../helper.js'
import { startPostgres, startRedis, waitFor } from '../support/processes.js'

async function health(app: Awaited<ReturnType<typeof build>>['app']) {
  const started = Date.now()
  const res = await app.inject({ method: 'GET', url: '/health' })
  return { status: res.statusCode, body: res.json(), ms: Date.now() - started }
}

t.test('200 with both dependencies online', async (t) => {
  const { app } = await build(t)
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['database', 'redis', 'status', 'timestamp'])
  t.match(body, { status: 'ok', redis: 'online', database: 'online' })
  t.ok(Math.abs(Date.parse(body.timestamp) - Date.now()) < 60_000, 'timestamp is now')
})

t.test('Redis hung, down and back: 503 within about a second, then 200 without a restart', async (t) => {
  const redis = await startRedis()
  t.teardown(redis.stop)
  const { app } = await build(t, { env: { REDIS_URL: redis.url } })
  t.equal((await health(app)).status, 200)

  redis.proc.kill('SIGSTOP') // hung: accepts nothing, answers nothing
  const hung = await health(app)
  t.equal(hung.status, 503)
  t.match(hung.body, { status: 'error', redis: 'offline', database: 'online' })
  t.ok(hung.ms < 1800, `hung Redis answered in ${hung.ms} ms`)

  redis.proc.kill('SIGCONT')
  await waitFor(async () => (await health(app)).status === 200, 10_000, 100)

  await redis.stop() // down: connection refused
  const down = await health(app)
  t.equal(down.status, 503)
  t.equal(down.body.redis, 'offline')
  t.ok(down.ms < 1800, `down Redis answered in ${down.ms} ms`)

  const again = await startRedis(redis.port)
  t.teardown(again.stop)
  await waitFor(async () => (await health(app)).status === 200, 10_000, 100)
  t.pass('200 again after Redis came back')
})

t.test('Postgres down and back: 503 within about a second, then 200 without a restart', async (t) => {
  const pg = await startPostgres()
  t.teardown(pg.destroy)
  const { app } = await build(t, { databaseUrl: pg.url })
  t.equal((await health(app)).status, 200)

  await pg.stop()
  const down = await health(app)
  t.equal(down.status, 503)
  t.match(down.body, { status: 'error', database: 'offline', redis: 'online' })
  t.ok(down.ms < 1800, `down Postgres answered in ${down.ms} ms`)

  await pg.start()
  await waitFor(async () => (await health(app)).status === 200, 10_000, 100)
  t.pass('200 again after Postgres came back')
})
