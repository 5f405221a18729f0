// The widget in a real browser shows the visitor's place in its team's queue (API.md section 16),
// live from routing's conversation:updated events, after a reload from GET /conversations/:id,
// and no more once an agent is assigned.
import t from 'tap'
import { seedGuest, seedWorkspace } from '../helper.js'
import { connect } from '../gateway/fixtures.js'
import { startConversation } from '../conversations/fixtures.js'
import { addToTeam, createTeam, setDefaultTeam } from '../teams/fixtures.js'
import { hostSite, launchBrowser, newPage, snippet, startStack } from './browser.js'

t.test('"You are number N in line", live as the queue moves, gone once assigned', async (t) => {
  const stack = await startStack(t)
  const { app } = stack
  const browser = await launchBrowser(t)
  const ws = await seedWorkspace(app, 'Queue shop')
  const team = await createTeam(app, ws.owner, { name: 'Support', assignment: 'round_robin' })
  await addToTeam(app, ws.owner, team.id, ws.agent.userId)
  await setDefaultTeam(app, ws, team.id)
  // The owner is online (so the widget offers a chat) but not in the team; its one agent is away.
  await connect(t, stack.gateway.url, { token: ws.owner.token, workspaceId: ws.workspaceId })
  const ahead = [await startConversation(app, await seedGuest(app, ws, 'First')), await startConversation(app, await seedGuest(app, ws, 'Second'))]
  t.same(ahead.map((c) => c.queue?.position), [1, 2], 'two visitors already wait')

  const site = await hostSite(t, { '/': `<!doctype html><html><body><h1>Shop</h1>${snippet(stack, ws, { name: 'Third' })}</body></html>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/')
  await page.locator('.launcher').click()
  const input = page.locator('textarea[aria-label="Type your message"]')
  await input.fill('Is anyone there?')
  await input.press('Enter')
  await page.locator('li.GUEST[data-id]', { hasText: 'Is anyone there?' }).waitFor()
  const line = page.locator('.queue')
  await line.filter({ hasText: 'You are number 3 in line' }).waitFor({ timeout: 10_000 })
  t.equal(await line.getAttribute('role'), 'status', 'read out by screen readers')

  // The first one ahead is taken by hand: everyone behind moves up, live.
  const assign = await app.inject({ method: 'PATCH', url: `/conversations/${ahead[0].id}/assign-agent`, headers: ws.owner.headers, payload: { agentId: ws.owner.userId } })
  t.equal(assign.statusCode, 200)
  await line.filter({ hasText: 'You are number 2 in line' }).waitFor({ timeout: 10_000 })

  // A reload shows the place again (GET /conversations/:id).
  await page.reload()
  await page.locator('.launcher').click()
  await line.filter({ hasText: 'You are number 2 in line' }).waitFor({ timeout: 10_000 })

  // The next one ahead is closed: number 1.
  const close = await app.inject({ method: 'PATCH', url: `/conversations/${ahead[1].id}/close`, headers: ws.owner.headers })
  t.equal(close.statusCode, 200)
  await line.filter({ hasText: 'You are number 1 in line' }).waitFor({ timeout: 10_000 })

  // The team's agent comes online: routing assigns the visitor's conversation; the line goes.
  await connect(t, stack.gateway.url, { token: ws.agent.token, workspaceId: ws.workspaceId })
  await line.waitFor({ state: 'hidden', timeout: 10_000 })
  const [row] = await app.deps.sql<{ assignedAgentId: string | null; queuedAt: string | null }[]>`
    SELECT assigned_agent_id AS "assignedAgentId", queued_at AS "queuedAt" FROM conversations
    WHERE guest_id = (SELECT id FROM guests WHERE workspace_id = ${ws.workspaceId} AND name = 'Third')`
  t.same(row, { assignedAgentId: ws.agent.userId, queuedAt: null }, 'assigned by routing')
})
