import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdapter } from '@socket.io/redis-adapter'
import { Redis } from 'ioredis'
import { Server } from 'socket.io'
import { io as connect, type Socket } from 'socket.io-client'
import t from 'tap'
import { rooms, socketIoKey } from '../../src/events.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { patch, send, startConversation } from './fixtures.js'

/**
 * End to end with a real Socket.IO server on the Redis adapter (what the gateway runs): the
 * events the API publishes reach the sockets in the right rooms and no others.
 */
t.test('published events fan out to the workspace and to the conversation guest only', async (t) => {
  const { app, redisPrefix } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const stranger = await seedGuest(app, ws)

  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const pub = new Redis(redisUrl)
  const sub = new Redis(redisUrl)
  const http = createServer()
  const io = new Server(http, { adapter: createAdapter(pub, sub, { key: socketIoKey(redisPrefix) }) })
  // The test gateway trusts the rooms the client names; the real one derives them from credentials.
  io.on('connection', (s) => s.join(s.handshake.auth.rooms as string[]))
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  t.teardown(async () => {
    await new Promise((r) => io.close(r))
    pub.disconnect()
    sub.disconnect()
  })

  const clients: Socket[] = []
  async function client(roomList: string[]) {
    const s = connect(url, { auth: { rooms: roomList }, transports: ['websocket'], forceNew: true })
    clients.push(s)
    const got: { event: string; payload: any }[] = []
    s.onAny((event, payload) => got.push({ event, payload }))
    await new Promise<void>((resolve, reject) => {
      s.on('connect', () => resolve())
      s.on('connect_error', reject)
    })
    return got
  }
  t.teardown(() => clients.forEach((c) => c.close()))
  const member = await client([rooms.workspace(ws.workspaceId)])
  const visitor = await client([rooms.guest(guest.guestId)])
  const otherVisitor = await client([rooms.guest(stranger.guestId)])
  const otherMember = await client([rooms.workspace(other.workspaceId)])
  // Let the adapter's subscription settle before publishing.
  await new Promise((r) => setTimeout(r, 200))

  const c = await startConversation(app, guest)
  const m = (await send(app, guest.headers, c.id, 'hello gateway')).json()
  await patch(app, ws.agent.headers, c.id, 'close')

  const until = async (pred: () => boolean) => {
    for (let i = 0; i < 100 && !pred(); i++) await new Promise((r) => setTimeout(r, 20))
  }
  await until(() => member.length >= 3 && visitor.length >= 3)
  for (const [who, got] of [['member', member], ['visitor', visitor]] as const) {
    t.same(got.map((e) => e.event), ['conversation:updated', 'message:new', 'conversation:updated'], who)
    t.same(got[1].payload, { conversationId: c.id, message: m }, `${who} got the message`)
    t.equal(got[2].payload.conversation.status, 'RESOLVED')
  }
  await new Promise((r) => setTimeout(r, 200))
  t.same(otherVisitor, [], 'another guest receives nothing')
  t.same(otherMember, [], 'another workspace receives nothing')
})
