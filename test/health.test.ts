import t from 'tap'
import { build } from './helper.js'

t.test('GET /health answers 200 with both dependencies online', async (t) => {
  const { app } = await build(t)
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.match(body, { status: 'ok', redis: 'online', database: 'online' })
  t.ok(!Number.isNaN(Date.parse(body.timestamp)))
})
