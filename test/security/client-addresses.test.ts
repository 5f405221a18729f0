import t from 'tap'
import { clientAddressKey, clientAddressOf } from '../../src/client-address.js'
import type { App } from '../../src/app.js'
import { build, seedWorkspace } from '../helper.js'

/**
 * A client address, as every limit keyed by address counts it (API.md section 2): the whole IPv4
 * address, or the /64 prefix of an IPv6 address; an IPv4-mapped IPv6 address is its IPv4 address.
 */

t.test('clientAddressKey: IPv4 whole, IPv6 by /64, IPv4-mapped as IPv4', async (t) => {
  const table: [string, string][] = [
    ['203.0.113.9', '203.0.113.9'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::26', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:c000:0201', '192.0.2.1'],
    ['0:0:0:0:0:ffff:198.51.100.7', '198.51.100.7'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4::/64'],
    ['1::5:6:7:8', '1:0:0:0::/64'],
    ['1:2:3:4::', '1:2:3:4::/64'],
    ['unknown', 'unknown'],
    ['', ''],
  ]
  for (const [ip, key] of table) t.equal(clientAddressKey(ip), key, ip)
})

const boot = (app: Awaited<ReturnType<typeof build>>['app'], channelId: string, from: { remoteAddress?: string; forwarded?: string }, i: number) =>
  app.inject({
    method: 'POST',
    url: '/auth',
    payload: { channelId, name: `G${i}`, email: `g${i}@example.test` },
    remoteAddress: from.remoteAddress ?? '10.0.0.2',
    ...(from.forwarded ? { headers: { 'x-forwarded-for': from.forwarded } } : {}),
  })

t.test('POST /auth: one IPv6 /64 is one budget, another /64 has its own', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const statuses: number[] = []
  // 20 a minute (AUTH_RATE_LIMIT_PER_MIN): each attempt from another host of the same /64.
  for (let i = 1; i <= 20; i++) statuses.push((await boot(app, ws.channelId, { remoteAddress: `2001:db8:1:2::${i.toString(16)}` }, i)).statusCode)
  t.same([...new Set(statuses)], [201], 'the first 20 of the /64')
  const over = await boot(app, ws.channelId, { remoteAddress: '2001:db8:1:2:ffff:ffff:ffff:26' }, 21)
  t.equal(over.statusCode, 429, 'the 21st, from yet another address of the same /64')
  t.match(over.json(), { statusCode: 429, code: 'RATE_LIMITED' })
  t.ok(Number(over.headers['retry-after']) >= 1)
  t.equal((await boot(app, ws.channelId, { remoteAddress: '2001:db8:1:3::1' }, 22)).statusCode, 201, 'the next /64 has its own budget')

  // An IPv4-mapped address counts as its IPv4 address.
  for (let i = 0; i < 20; i++) {
    const r = await boot(app, ws.channelId, { remoteAddress: i % 2 ? '198.51.100.7' : '::ffff:198.51.100.7' }, 100 + i)
    if (r.statusCode !== 201) t.fail(`IPv4 attempt ${i}: ${r.statusCode}`)
  }
  t.equal((await boot(app, ws.channelId, { remoteAddress: '::ffff:198.51.100.7' }, 200)).statusCode, 429, 'mapped and plain IPv4 share one budget')
})

t.test('behind a trusted proxy: the forwarded IPv6 address counts by its /64', async (t) => {
  const { app } = await build(t, { env: { TRUST_PROXY: '10.0.0.0/8', AUTH_RATE_LIMIT_PER_MIN: '3' } })
  const ws = await seedWorkspace(app)
  const statuses = []
  for (let i = 1; i <= 4; i++) statuses.push((await boot(app, ws.channelId, { forwarded: `2001:db8:aa:bb::${i}` }, i)).statusCode)
  t.same(statuses, [201, 201, 201, 429])
  t.equal((await boot(app, ws.channelId, { forwarded: '2001:db8:aa:bc::1' }, 5)).statusCode, 201, 'another /64')
})

t.test('clientAddressOf (the gateway\'s handshakes) answers what Fastify answers for the API', async (t) => {
  const settings = ['false', 'true', '10.0.0.0/8', '10.0.0.2, 192.0.2.0/24', '10.0.0.0/255.0.0.0', '2001:db8:ffff::/48']
  const cases: { remoteAddress: string; forwarded?: string }[] = [
    { remoteAddress: '10.0.0.2' },
    { remoteAddress: '10.0.0.2', forwarded: '203.0.113.9' },
    { remoteAddress: '::ffff:10.0.0.2', forwarded: '2001:db8:1:2::1' },
    { remoteAddress: '10.0.0.2', forwarded: '198.51.100.1, 192.0.2.5' },
    { remoteAddress: '10.0.0.2', forwarded: '198.51.100.1, 203.0.113.7' },
    { remoteAddress: '2001:db8:ffff:1::1', forwarded: '2001:db8:1:2::1' },
    { remoteAddress: '203.0.113.50', forwarded: '198.51.100.1' },
  ]
  let databaseUrl: string | undefined
  for (const setting of settings) {
    const ours = clientAddressOf(setting)
    const register = (app: App) => app.get('/__ip', { config: { access: 'public' } }, async (request) => ({ fastify: request.ip, ours: ours(request.raw) }))
    const built = await build(t, { register, env: { TRUST_PROXY: setting }, databaseUrl })
    databaseUrl = built.databaseUrl
    for (const c of cases) {
      const r = (await built.app.inject({ method: 'GET', url: '/__ip', remoteAddress: c.remoteAddress, headers: c.forwarded ? { 'x-forwarded-for': c.forwarded } : {} })).json()
      t.equal(r.ours, r.fastify, `TRUST_PROXY=${setting}, ${c.remoteAddress} forwarding ${c.forwarded ?? 'nothing'}: ${r.fastify}`)
    }
  }
})
