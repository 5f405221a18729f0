import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, patch, send, startConversation, unreadCount, type PublishedEvent } from '../conversations/fixtures.js'
import { rooms } from '../../src/events.js'
import { addToTeam, createTeam, setDefaultTeam } from './fixtures.js'

/** Private teams (API.md section 16): one visibility rule for reads, lists, counts, history and events. */
t.test("a private team's conversations: only its members, owners and admins", async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const insider = await ws.addMember('agent', 'Insider')
  const vip = await createTeam(app, ws.owner, { name: 'VIP', private: true })
  await addToTeam(app, ws.owner, vip.id, insider.userId)
  const guest = await seedGuest(app, ws)
  const secret = await startConversation(app, guest)
  const otherGuest = await seedGuest(app, ws, 'Other guest')
  const open = await startConversation(app, otherGuest)
  await send(app, guest.headers, secret.id, 'private matter')
  await send(app, otherGuest.headers, open.id, 'public matter')

  const before = await unreadCount(app, ws, ws.agent)
  t.equal(before.total, 2)
  await events.settle()
  events.clear()
  const moved = await patch(app, ws.admin.headers, secret.id, 'team', { teamId: vip.id })
  t.equal(moved.statusCode, 200)
  const update = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.id === secret.id)
  t.notOk(update.rooms.includes(rooms.workspace(ws.workspaceId)), 'not to the whole workspace')
  t.ok(update.rooms.includes(rooms.member(ws.workspaceId, insider.userId)), 'to the team member')
  t.ok(update.rooms.includes(rooms.member(ws.workspaceId, ws.admin.userId)), 'to an admin')
  t.notOk(update.rooms.includes(rooms.member(ws.workspaceId, ws.agent.userId)), 'not to an agent outside the team')

  // At once, for every read of the outsider.
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${secret.id}`, headers: ws.agent.headers })).statusCode, 404)
  t.equal((await patch(app, ws.agent.headers, secret.id, 'close')).statusCode, 404, 'no action on it either')
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${secret.id}/messages`, headers: ws.agent.headers })).statusCode, 404)
  const list = (await app.inject({ method: 'GET', url: '/conversations', headers: ws.agent.headers })).json().data.map((c: { id: string }) => c.id)
  t.same(list, [open.id], 'not in the list')
  const history = (await app.inject({ method: 'GET', url: `/conversations/guest/${guest.guestId}/history`, headers: ws.agent.headers })).json().data
  t.same(history, [], "not in the guest's history")
  const outsider = await unreadCount(app, ws, ws.agent)
  t.match(outsider, { total: 1, unassigned: 1, messages: 1 }, 'not in the outsider’s totals')
  t.same(outsider.byTeam, {}, 'nor its byTeam')
  t.same(outsider.byChannel, { [ws.channelId]: 1 }, 'nor its channel’s count')

  const search = async (who: typeof insider) =>
    (await app.inject({ method: 'GET', url: '/conversations/search?q=matter', headers: who.headers })).json().data.map((c: { id: string }) => c.id).sort()
  t.same(await search(ws.agent), [open.id], 'not in a search')
  t.same(await search(insider), [open.id, secret.id].sort(), 'an insider finds it')
  // The label list too: at scale its keys come from the list index alone (team_id included since
  // migration 0024, test/conversations/list-plans.test.ts), and the rule must hold on either plan.
  const label = (await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: 'Billing', color: '#123456' } })).json()
  for (const id of [secret.id, open.id]) {
    t.equal((await app.inject({ method: 'PUT', url: `/conversations/${id}/labels`, headers: ws.admin.headers, payload: { labelIds: [label.id] } })).statusCode, 200)
  }
  const labelled = async (who: typeof insider) =>
    (await app.inject({ method: 'GET', url: `/conversations?labelIds=${label.id}`, headers: who.headers })).json().data.map((c: { id: string }) => c.id).sort()
  t.same(await labelled(ws.agent), [open.id], 'not in a label list')
  t.same(await labelled(insider), [open.id, secret.id].sort(), 'an insider lists it by label')
  events.clear()
  await send(app, guest.headers, secret.id, 'still private')
  const message = await events.waitFor((e) => e.event === 'message:new' && e.payload.conversationId === secret.id)
  t.notOk(message.rooms.includes(rooms.workspace(ws.workspaceId)), 'its messages are not sent to the whole workspace')
  t.ok(message.rooms.includes(rooms.guest(guest.guestId)), 'but to its visitor')

  // Insiders, owners and admins see it, and count it.
  for (const who of [insider, ws.owner, ws.admin]) {
    t.equal((await app.inject({ method: 'GET', url: `/conversations/${secret.id}`, headers: who.headers })).statusCode, 200)
    const counts = await unreadCount(app, ws, who)
    t.match(counts, { total: 2, unassigned: 2 })
    t.same(counts.byTeam, { [vip.id]: 1 })
    t.same(counts.byChannel, { [ws.channelId]: 2 })
  }
  const insiderList = (await app.inject({ method: 'GET', url: '/conversations', headers: insider.headers })).json().data
  t.equal(insiderList.length, 2)
  // The visitor still sees its own conversation.
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${secret.id}`, headers: guest.headers })).statusCode, 200)
  const reconcile = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })
  t.equal(reconcile.json().corrected, false)

  // Once the channel's only unread conversation the outsider may see is read, the channel leaves
  // their byChannel (the private one is not counted as 1), and stays in an insider's.
  t.equal((await patch(app, ws.agent.headers, open.id, 'mark-seen')).statusCode, 200)
  t.same((await unreadCount(app, ws, ws.agent)).byChannel, {}, 'no channel entry from the private team')
  t.same((await unreadCount(app, ws, insider)).byChannel, { [ws.channelId]: 1 })
  const again = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })
  t.equal(again.json().corrected, false, 'the per-team-and-channel counters agree with a recount')
})

t.test("an offline message on a channel whose default team is private: its events reach only who may see it", async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const insider = await ws.addMember('agent', 'Insider')
  const vip = await createTeam(app, ws.owner, { name: 'VIP', private: true })
  await addToTeam(app, ws.owner, vip.id, insider.userId)
  await setDefaultTeam(app, ws, vip.id)
  const guest = await seedGuest(app, ws)
  const res = await app.inject({ method: 'POST', url: '/support/offline-message', headers: guest.headers, payload: { body: 'call me back' } })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  for (const name of ['conversation:updated', 'message:new']) {
    const about = (x: PublishedEvent) => x.event === name && (x.payload.conversation?.id ?? x.payload.conversationId) === id
    const e = await events.waitFor((x) => about(x) && x.rooms.includes(rooms.member(ws.workspaceId, insider.userId)))
    t.notOk(e.rooms.includes(rooms.workspace(ws.workspaceId)), `${name}: not to the whole workspace`)
    t.notOk(e.rooms.includes(rooms.member(ws.workspaceId, ws.agent.userId)), `${name}: not to an agent outside the team`)
    // The visitor hears of it too: in the same event, or (conversation:updated) in its own, with
    // the visitor's view of the conversation (no service level: API.md section 18).
    const g = await events.waitFor((x) => about(x) && x.rooms.includes(rooms.guest(guest.guestId)))
    t.notOk(g.rooms.includes(rooms.workspace(ws.workspaceId)), `${name}: the visitor's event is not the workspace's`)
    t.notOk(g.rooms.includes(rooms.member(ws.workspaceId, ws.agent.userId)), `${name}: nor an outside agent's`)
  }
  await events.settle()
  t.equal(events.events.filter((x) => x.rooms.includes(rooms.workspace(ws.workspaceId))).length, 0, 'nothing of it to the whole workspace')
})
