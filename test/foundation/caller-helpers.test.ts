import t from 'tap'
import { randomUUID } from 'node:crypto'
import type { Caller } from '../../src/auth/callers.js'
import { contextFor, memberOf, senderOf, visitorOf } from '../../src/context.js'
import { createConversation } from '../../src/conversations/lifecycle.js'
import { postMessage } from '../../src/conversations/messages.js'
import { rateConversation } from '../../src/support/csat.js'
import { sendOfflineMessage } from '../../src/support/offline.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

/**
 * The caller helpers of src/context.ts fail alike: a domain function reached by a caller kind its
 * route does not admit is a declaration bug, 500 INTERNAL_ERROR (never a 403 written by hand),
 * while over HTTP the route's access answers first (401/403, unchanged).
 */
const { app } = await build(t)
const ws = await seedWorkspace(app)
const guest = await seedGuest(app, ws)
const conv = await startConversation(app, guest)
const member: Caller = { kind: 'member', workspaceId: ws.workspaceId, userId: ws.agent.userId, role: 'agent', name: 'A', email: 'a@example.test' }
const visitor: Caller = { kind: 'visitor', workspaceId: ws.workspaceId, guestId: guest.guestId, channelId: ws.channelId }
const bug = { statusCode: 500, code: 'INTERNAL_ERROR' }

t.test('the helpers: the caller of the right kind, else 500 INTERNAL_ERROR', async (t) => {
  t.equal(memberOf(contextFor(app.deps, member)), member)
  t.equal(visitorOf(contextFor(app.deps, visitor)), visitor)
  t.match(senderOf(contextFor(app.deps, member)), { type: 'AGENT', id: ws.agent.userId })
  t.match(senderOf(contextFor(app.deps, visitor)), { type: 'GUEST', id: guest.guestId })
  t.throws(() => memberOf(contextFor(app.deps, visitor)), bug)
  t.throws(() => visitorOf(contextFor(app.deps, member)), bug)
  for (const kind of ['anonymous', 'system'] as const) t.throws(() => senderOf(contextFor(app.deps, { kind })), bug, kind)
})

t.test('visitor-only functions reached by a member: 500, not a hand-written 403', async (t) => {
  const ctx = contextFor(app.deps, member)
  await t.rejects(createConversation(ctx, { channelId: ws.channelId, guestId: guest.guestId }), bug, 'createConversation')
  await t.rejects(sendOfflineMessage(ctx, { body: 'hello' } as Parameters<typeof sendOfflineMessage>[1]), bug, 'sendOfflineMessage')
  await t.rejects(rateConversation(ctx, { conversationId: conv.id, rating: 5 } as Parameters<typeof rateConversation>[1]), bug, 'rateConversation')
  await t.rejects(postMessage(contextFor(app.deps, { kind: 'system' }), conv.id, { body: 'x' }), bug, 'postMessage by the system')
})

t.test('over HTTP the route decides first: a member token on a visitor route is 401 as before', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/conversations', headers: ws.agent.headers, payload: { channelId: ws.channelId, guestId: randomUUID() } })
  t.equal(res.statusCode, 401, res.body)
  t.equal(res.json().code, 'UNAUTHENTICATED')
})
