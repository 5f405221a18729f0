import type { InjectOptions } from 'fastify'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'

/**
 * API.md section 1, order of checks: authentication, then permission, then validation. A caller
 * without valid credentials gets 401 whatever it sends (before 413, 415, a malformed-JSON or
 * unknown-field 400, or a malformed :id's 404), so it learns nothing of the schema.
 */
t.test('authentication and permission come before the body and its validation', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = (await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: guest.guestId } })).json()
  const url = `/conversations/${conv.id}/messages`

  const anonymous: [string, InjectOptions][] = [
    ['an unknown field', { method: 'POST', url, payload: { body: 'hi', role: 'owner' } }],
    ['a wrong type', { method: 'POST', url, payload: { body: 12345 } }],
    ['malformed JSON', { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '{"body": ' }],
    ['another content type', { method: 'POST', url, headers: { 'content-type': 'text/plain' }, payload: 'hi' }],
    ['a body over 1 MiB', { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ body: 'x'.repeat(1_100_000) }) }],
    ['a deep body', { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '['.repeat(100) + ']'.repeat(100) }],
    ['a malformed :id', { method: 'POST', url: '/conversations/not-a-uuid/messages', payload: { nope: true } }],
    ['an unknown query parameter', { method: 'GET', url: '/conversations?role=owner&limit=abc' }],
    ['a member route with a visitor session', { method: 'PATCH', url: `/conversations/${conv.id}/assign-agent`, headers: guest.headers, payload: { agentId: 12 } }],
    ['a forged session', { method: 'POST', url, headers: { 'x-visitor-session': 'forged' }, payload: { role: 'owner' } }],
    ['a member token without a Bearer', { method: 'POST', url: '/channels', headers: { authorization: 'Basic abc' }, payload: { name: 5 } }],
  ]
  for (const [what, req] of anonymous) {
    const res = await app.inject(req)
    t.equal(res.statusCode, 401, `${what}: 401`)
    t.match(res.json(), { statusCode: 401, error: 'Unauthorized' }, `${what}: the contract's body`)
    t.notMatch(res.body, /role|body|VALIDATION|limit|uuid/i, `${what}: nothing about the schema`)
  }

  // A member without the permission: 403 before validation.
  const forbidden = await app.inject({ method: 'POST', url: '/channels', headers: ws.agent.headers, payload: { name: 12, unknown: true } })
  t.equal(forbidden.statusCode, 403)
  t.equal(forbidden.json().code, 'FORBIDDEN')
  const tooBig = await app.inject({
    method: 'DELETE',
    url: `/conversations/${conv.id}`,
    headers: { ...ws.agent.headers, 'content-type': 'application/json' },
    payload: JSON.stringify({ x: 'y'.repeat(1_100_000) }),
  })
  t.equal(tooBig.statusCode, 403, 'an agent deleting with a 1 MiB body: 403, not 413')

  // Then validation, for callers who may call the route.
  const invalid = await app.inject({ method: 'POST', url, headers: guest.headers, payload: { body: 'hi', role: 'owner' } })
  t.equal(invalid.statusCode, 400)
  t.match(invalid.json().message, /role/)
  const big = await app.inject({ method: 'POST', url, headers: { ...guest.headers, 'content-type': 'application/json' }, payload: JSON.stringify({ body: 'x'.repeat(1_100_000) }) })
  t.equal(big.statusCode, 413)
  const badId = await app.inject({ method: 'POST', url: '/conversations/not-a-uuid/messages', headers: guest.headers, payload: { body: 'hi' } })
  t.equal(badId.statusCode, 404)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM messages`
  t.equal(n, 0, 'nothing was stored')
})
