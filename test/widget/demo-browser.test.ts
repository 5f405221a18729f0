// GET /demo in a real browser: a member token pasted into the agent pane, the shop and its widget
// beside it, a visitor and the agent talking, the conversation closed through the member API.
import t from 'tap'
import { memberToken } from '../helper.js'
import { launchBrowser, newPage, SCREENSHOTS, startStack } from './browser.js'

t.test('in a browser: a token, then the shop and its widget beside the agent pane; a visitor and the agent talk', async (t) => {
  const stack = await startStack(t)
  const { sql } = stack.app.deps
  const browser = await launchBrowser(t)
  const page = await newPage(t, browser)
  await page.goto(`${stack.apiUrl}/demo`)
  await page.locator('#token').fill(await memberToken('demo|alice', { name: 'Alice', email: 'alice@example.test' }))
  await page.locator('#token-form button').click()
  await page.locator('#live', { hasText: 'live' }).waitFor({ timeout: 15_000 })
  const [workspace] = await sql<{ id: string }[]>`SELECT w.id FROM workspaces w JOIN members m ON m.workspace_id = w.id WHERE m.user_id = 'demo|alice'`
  t.ok(workspace, 'the pane made a workspace for the token')

  // The visitor, in the shop's frame.
  const shop = page.frameLocator('#shop')
  await shop.locator('.launcher').click()
  await shop.locator('textarea[aria-label="Type your message"]').fill('Do you ship to Norway?')
  await shop.locator('textarea[aria-label="Type your message"]').press('Enter')
  await shop.locator('li.GUEST[data-id]', { hasText: 'Do you ship to Norway?' }).waitFor()

  // The agent sees it live, opens it, answers, and the widget shows the answer.
  await page.locator('#list button', { hasText: 'Do you ship to Norway?' }).click({ timeout: 10_000 })
  await page.locator('#thread li', { hasText: 'Do you ship to Norway?' }).waitFor()
  await page.locator('#reply').fill('Yes, in 3 to 5 days.')
  await page.locator('#reply-form button').click()
  await shop.locator('li.AGENT', { hasText: 'Yes, in 3 to 5 days.' }).waitFor({ timeout: 10_000 })
  if (SCREENSHOTS) {
    await page.screenshot({ path: `${SCREENSHOTS}/demo.png` })
    await page.locator('#shop').screenshot({ path: `${SCREENSHOTS}/widget-open.png` })
  }

  await page.locator('#close').click()
  await page.locator('#list li', { hasText: 'No open conversations yet.' }).waitFor({ timeout: 10_000 })
  const rows = await sql<{ status: string }[]>`SELECT status FROM conversations WHERE workspace_id = ${workspace.id}`
  t.same(rows, [{ status: 'RESOLVED' }], 'closed through the member API')
})
