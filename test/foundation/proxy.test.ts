import t from 'tap'
import type { App } from '../../src/app.js'
import { build } from '../helper.js'

const register = (app: App) => app.get('/__ip', { config: { access: 'public' } }, async (request) => ({ ip: request.ip }))
const ipOf = async (app: App) =>
  (await app.inject({ method: 'GET', url: '/__ip', headers: { 'x-forwarded-for': '203.0.113.9' }, remoteAddress: '10.0.0.2' })).json().ip

t.test('X-Forwarded-For is ignored unless TRUST_PROXY says to believe it', async (t) => {
  const plain = await build(t, { register })
  t.equal(await ipOf(plain.app), '10.0.0.2', 'default: a client cannot choose its address (rate limits key on it)')
  const oneHop = await build(t, { register, env: { TRUST_PROXY: '10.0.0.0/8' }, databaseUrl: plain.databaseUrl })
  t.equal(await ipOf(oneHop.app), '203.0.113.9', 'behind a trusted ingress: the address it forwarded')
})
