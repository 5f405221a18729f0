import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { insertConversations } from './seed.js'

/**
 * The list routes are static paths beside the `/conversations/:id` routes: find-my-way matches a
 * static segment before a parameter, so the fixed words are never read as a conversation id, and
 * CORS follows the route that answers.
 */
t.test('fixed words are never read as a conversation :id', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const [c] = await insertConversations(app, ws, [{ assignedAgentId: ws.agent.userId, status: 'OPEN' }])

  for (const url of ['/conversations/Myconversation', '/conversations/closed', '/conversations/available-agents', '/conversations/']) {
    const res = await app.inject({ url, headers: ws.agent.headers })
    t.equal(res.statusCode, 200, url)
    t.ok(Array.isArray(res.json().data), `${url} answered by its list route`)
    const anon = await app.inject({ url })
    t.equal(anon.statusCode, 401, `${url} is guarded as a member route, not answered by /:id`)
  }
  t.same(
    (await app.inject({ url: '/conversations/Myconversation', headers: ws.agent.headers })).json().data.map((x: { id: string }) => x.id),
    [c!.id],
  )

  const byId = await app.inject({ url: `/conversations/${c!.id}`, headers: ws.agent.headers })
  t.equal(byId.statusCode, 200, 'a uuid reaches the :id route')
  const unknown = await app.inject({ url: '/conversations/01900000-0000-7000-8000-000000000000', headers: ws.agent.headers })
  t.equal(unknown.statusCode, 404)
  t.equal(unknown.json().code, 'CONVERSATION_NOT_FOUND')
  // CORS follows the route that answers: the member-only lists do not inherit the open CORS of
  // the visitor-callable `/:id` pattern.
  const foreignOrigin = 'https://evil.example'
  for (const url of ['/conversations/Myconversation', '/conversations/closed', '/conversations/available-agents']) {
    const res = await app.inject({ url, headers: { ...ws.agent.headers, origin: foreignOrigin } })
    t.equal(res.headers['access-control-allow-origin'], undefined, `${url}: no CORS for a foreign origin`)
    const pre = await app.inject({
      method: 'OPTIONS',
      url,
      headers: { origin: foreignOrigin, 'access-control-request-method': 'GET' },
    })
    t.equal(pre.headers['access-control-allow-origin'], undefined, `${url}: preflight refused for a foreign origin`)
    const app_ = await app.inject({ url, headers: { ...ws.agent.headers, origin: 'http://localhost:5173' } })
    t.equal(app_.headers['access-control-allow-origin'], 'http://localhost:5173', `${url}: the agent app's origin is allowed`)
  }
  const openOne = await app.inject({ url: `/conversations/${c!.id}`, headers: { ...ws.agent.headers, origin: foreignOrigin } })
  t.ok(openOne.headers['access-control-allow-origin'], 'the visitor-callable :id route stays open to any origin')

  // Words close to the fixed ones are not the fixed ones.
  const near = await app.inject({ url: '/conversations/myconversation', headers: ws.agent.headers })
  t.not(near.statusCode, 200)
})
