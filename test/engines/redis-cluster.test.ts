// Parley on a Redis Cluster of 3 primaries and 3 replicas started here from this machine's
// redis-server (API.md section 20): two API replicas and two gateways share it; events fan out
// across the gateways, a rate limit is shared by the two replicas, presence works, and a
// primary's failover costs at most some 503s, never a wrong answer, and heals by itself within
// 30 s of the promotion. Opt-in locally: PARLEY_ENGINE_TESTS=1.
import { spawnSync } from 'node:child_process'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { connect, next, startGateway, testDatabaseAndPrefix } from '../gateway/fixtures.js'
import { engineSkip, sleep, startRedisCluster, waitFor } from './engines.js'

const skip = engineSkip(['redis-server', 'redis-cli'])
if (skip) t.comment(skip)

const cli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout

t.test('two API replicas and two gateways on a Redis Cluster, through a primary failover', { skip }, async (t) => {
  const cluster = await startRedisCluster(t)
  const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
  const env = { REDIS_URL: cluster.url, REDIS_PREFIX: redisPrefix, AUTH_RATE_LIMIT_PER_MIN: '6', PRESENCE_TTL_S: '10' }
  const [{ app }, second, gw1, gw2] = await Promise.all([
    build(t, { databaseUrl, env }),
    build(t, { databaseUrl, env }),
    startGateway(t, { databaseUrl, redisPrefix, env: { REDIS_URL: cluster.url } }),
    startGateway(t, { databaseUrl, redisPrefix, env: { REDIS_URL: cluster.url } }),
  ])
  const ws = await seedWorkspace(app)

  // A conversation's message reaches members on both gateways, whichever replica took it.
  const fanOut = async (via: typeof app, body: string, timeoutMs = 5000) => {
    const agent = await connect(t, gw1.url, { token: ws.agent.token, workspaceId: ws.workspaceId })
    const admin = await connect(t, gw2.url, { token: ws.admin.token, workspaceId: ws.workspaceId })
    try {
      const guest = await seedGuest(app, ws, `Guest ${body}`)
      const conv = await via.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: guest.channelId, guestId: guest.guestId } })
      if (conv.statusCode !== 201) return false
      const id = conv.json().id
      const got = Promise.all([agent, admin].map((s) => next<{ conversationId: string; message: { body: string } }>(s, 'message:new', (p) => p.conversationId === id, timeoutMs)))
      got.catch(() => {})
      const res = await via.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers: guest.headers, payload: { body } })
      if (res.statusCode !== 201) return false
      const [a, b] = await got
      return a.message.body === body && b.message.body === body
    } finally {
      agent.disconnect()
      admin.disconnect()
    }
  }

  await t.test('events fan out across two gateways from either replica', async (t) => {
    t.ok(await fanOut(app, 'from replica one'), 'both gateways delivered')
    t.ok(await fanOut(second.app, 'from replica two'), 'both gateways delivered')
  })

  await t.test('presence written by one gateway is read by the API', async (t) => {
    const agent = await connect(t, gw2.url, { token: ws.agent.token, workspaceId: ws.workspaceId })
    await waitFor('the agent online', async () => {
      const res = await second.app.inject({ method: 'GET', url: `/support/widget/${ws.channelId}` })
      return res.statusCode === 200 && res.json().online === true
    }, 10_000)
    agent.disconnect()
    t.pass('the widget says an agent is online')
  })

  await t.test('a rate limit is shared by the two replicas', async (t) => {
    const codes: number[] = []
    for (let i = 0; i < 10; i++) {
      const res = await (i % 2 ? second.app : app).inject({ method: 'POST', url: '/auth', payload: { channelId: ws.channelId, name: `V${i}` }, remoteAddress: '203.0.113.9' })
      codes.push(res.statusCode)
    }
    t.same(codes, [201, 201, 201, 201, 201, 201, 429, 429, 429, 429], 'six in the minute across both, then 429 from either')
  })

  await t.test('a primary fails over: 503s at most, no wrong answer, healed within 30 s of the promotion', async (t) => {
    // The primary that holds presence's slot (the one hash tag) is the one to kill.
    const tag = /\{([^}]+)\}/.exec(`{${redisPrefix}}`)![1]!
    const slot = Number(cli(cluster.nodes[0]!.port, 'cluster', 'keyslot', tag).trim())
    const owner = cluster.nodes.find((n) => {
      const line = cli(n.port, 'cluster', 'nodes').split('\n').find((l) => l.includes('myself'))!
      return line.includes('master') && line.split(' ').slice(8).some((r) => {
        const [lo, hi] = r.split('-').map(Number)
        return slot >= lo! && slot <= (hi ?? lo)!
      })
    })!
    t.ok(owner, `slot ${slot} has a primary`)
    const seen: Record<string, number> = {}
    const wrong: string[] = []
    let stopLoad = false
    // Load during the failover: presence reads (503 when Redis fails) and visitor bootstraps (a
    // rate-limited route: counted in the process while Redis fails, never refused wrongly).
    const load = (async () => {
      let i = 0
      while (!stopLoad) {
        const via = i++ % 2 ? second.app : app
        const online = await via.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })
        seen[`online ${online.statusCode}`] = (seen[`online ${online.statusCode}`] ?? 0) + 1
        if (online.statusCode === 200 && !Array.isArray(online.json().data)) wrong.push(online.body)
        if (online.statusCode !== 200 && online.statusCode !== 503) wrong.push(`online ${online.statusCode} ${online.body}`)
        const conv = await via.inject({ method: 'GET', url: '/conversations?limit=5', headers: ws.agent.headers })
        if (conv.statusCode !== 200) wrong.push(`conversations ${conv.statusCode}`)
        await sleep(50)
      }
    })()
    owner.process.kill('SIGKILL')
    const killedAt = Date.now()
    const survivor = cluster.nodes.find((n) => n !== owner)!
    await waitFor('a replica promoted', async () => {
      const flags = cli(survivor.port, 'cluster', 'nodes').split('\n').filter(Boolean).map((l) => l.split(' ')[2]!)
      const liveMasters = flags.filter((f) => f.includes('master') && !f.includes('fail'))
      return cli(survivor.port, 'cluster', 'info').includes('cluster_state:ok') && liveMasters.length === 3 && flags.some((f) => f.includes('fail'))
    }, 60_000, 200)
    const promotedAt = Date.now()
    t.comment(`promotion ${promotedAt - killedAt} ms after the kill`)
    // Everything works again within 30 s of the promotion, without a restart.
    await waitFor('healed', async () => {
      const [a, b] = await Promise.all([app, second.app].map((x) => x.inject({ method: 'GET', url: '/visitors/online', headers: ws.agent.headers })))
      const health = await app.inject({ method: 'GET', url: '/health' })
      return a!.statusCode === 200 && b!.statusCode === 200 && health.statusCode === 200 && (await fanOut(app, `after failover ${Date.now()}`, 2000))
    }, 30_000, 500)
    t.comment(`healed ${Date.now() - promotedAt} ms after the promotion`)
    stopLoad = true
    await load
    t.comment(`answers during the failover: ${JSON.stringify(seen)}`)
    t.same(wrong, [], 'no wrong answer during the failover')
    t.ok(Date.now() - promotedAt < 30_000, 'healed within 30 s of the promotion')
    t.ok(await fanOut(second.app, 'fan-out after failover'), 'both gateways deliver again')
  })
})
