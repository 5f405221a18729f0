/**
 * Fan-out benchmark of the real-time gateway: two gateway processes on one Redis, MEMBERS member
 * sockets of one workspace spread over both, GUESTS visitor sockets, and the API's publisher
 * sending EVENTS messages at RATE per second (each to the workspace and one guest). Reports the
 * publish -> receive latency of every delivery.
 *
 *   node --import tsx bench/gateway.ts            (MEMBERS=400 GUESTS=200 EVENTS=200 RATE=50)
 */
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import pino from 'pino'
import type { Socket } from 'socket.io-client'
import { createSql } from '../src/db/client.js'
import { createVisitorTokens } from '../src/auth/tokens.js'
import { loadConfig } from '../src/config.js'
import { createPublisher, rooms } from '../src/events.js'
import { connect, startGateway, testDatabaseAndPrefix } from '../test/gateway/fixtures.js'
import { memberToken, testEnv } from '../test/helper.js'

const MEMBERS = Number(process.env.MEMBERS ?? 400)
const GUESTS = Number(process.env.GUESTS ?? 200)
const EVENTS = Number(process.env.EVENTS ?? 200)
const RATE = Number(process.env.RATE ?? 50)

const teardowns: (() => unknown)[] = []
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) }
try {
  const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
  const config = loadConfig(testEnv({ DATABASE_URL: databaseUrl, REDIS_PREFIX: redisPrefix }))
  const sql = createSql(databaseUrl, 2)
  const workspaceId = randomUUID()
  const channelId = randomUUID()
  await sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'Bench')`
  await sql`
    INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret)
    VALUES (${channelId}, ${workspaceId}, 'Web', ${`ct_${randomUUID()}`}, ${`is_${randomUUID()}`})`
  const userIds = Array.from({ length: MEMBERS }, (_, i) => `bench|${i}`)
  await sql`
    INSERT INTO members (workspace_id, user_id, name, role)
    SELECT ${workspaceId}, u, u, 'agent' FROM unnest(${userIds}::text[]) AS u`
  const guestIds = Array.from({ length: GUESTS }, () => randomUUID())
  if (GUESTS) {
    await sql`
      INSERT INTO guests (id, workspace_id, channel_id, name, email)
      SELECT g, ${workspaceId}, ${channelId}, 'Guest', g || '@example.test' FROM unnest(${guestIds}::uuid[]) AS g`
  }
  await sql.end()

  const gateways = await Promise.all([startGateway(t, { databaseUrl, redisPrefix }), startGateway(t, { databaseUrl, redisPrefix })])
  const visitorTokens = createVisitorTokens(config)
  const sockets: { socket: Socket; guestId?: string }[] = []
  const connectStart = Date.now()
  for (let i = 0; i < MEMBERS; i += 50) {
    await Promise.all(
      userIds.slice(i, i + 50).map(async (userId, j) => {
        const socket = await connect(t, gateways[(i + j) % 2].url, { token: await memberToken(userId), workspaceId })
        sockets.push({ socket })
      }),
    )
  }
  for (let i = 0; i < GUESTS; i += 50) {
    await Promise.all(
      guestIds.slice(i, i + 50).map(async (guestId, j) => {
        const { token } = visitorTokens.sign({ guestId, channelId, workspaceId })
        sockets.push({ socket: await connect(t, gateways[(i + j) % 2].url, { visitorSession: token }), guestId })
      }),
    )
  }
  const connectMs = Date.now() - connectStart

  const sent = new Map<string, bigint>()
  const latencies: number[] = []
  let wrong = 0
  for (const { socket, guestId } of sockets) {
    socket.on('message:new', (p: { conversationId: string; guestId: string }) => {
      const at = sent.get(p.conversationId)
      if (at !== undefined) latencies.push(Number(process.hrtime.bigint() - at) / 1e6)
      if (guestId && p.guestId !== guestId) wrong++
    })
  }
  const redis = new Redis(config.REDIS_URL)
  const publisher = createPublisher(redis, redisPrefix, pino({ level: 'warn' }))
  const expected = EVENTS * (MEMBERS + 1)
  const done = new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (latencies.length >= expected) {
        clearInterval(check)
        resolve()
      }
    }, 20)
  })
  for (let i = 0; i < EVENTS; i++) {
    const conversationId = randomUUID()
    const guestId = guestIds[i % Math.max(1, GUESTS)]
    sent.set(conversationId, process.hrtime.bigint())
    publisher.publish([rooms.workspace(workspaceId), ...(GUESTS ? [rooms.guest(guestId)] : [])], 'message:new', { conversationId, guestId, message: { body: `m${i}` } })
    await new Promise((r) => setTimeout(r, 1000 / RATE))
  }
  await Promise.race([done, new Promise((r) => setTimeout(r, 20_000).unref())])
  await redis.quit()

  latencies.sort((a, b) => a - b)
  const pct = (p: number) => Number(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(2))
  const result = {
    at: new Date().toISOString(),
    members: MEMBERS,
    guests: GUESTS,
    events: EVENTS,
    ratePerS: RATE,
    connectMs,
    deliveriesExpected: expected,
    deliveries: latencies.length,
    wrongGuestDeliveries: wrong,
    latencyMs: { p50: pct(50), p95: pct(95), p99: pct(99), max: pct(100) },
  }
  console.log(JSON.stringify(result, null, 2))
  writeFileSync(new URL('./results/gateway.json', import.meta.url), JSON.stringify(result, null, 2) + '\n')
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
