// GET /demo in a real browser, section 17: the agent pane labels a conversation VIP and snoozes it.
import t from 'tap'
import { memberToken } from '../helper.js'
import { launchBrowser, newPage, startStack } from './browser.js'

t.test('in a browser: the agent pane labels a conversation and snoozes it for an hour', async (t) => {
  const stack = await startStack(t)
  const { sql } = stack.app.deps
  const browser = await launchBrowser(t)
  const page = await newPage(t, browser)
  await page.goto(`${stack.apiUrl}/demo`)
  await page.locator('#token').fill(await memberToken('demo|bea', { name: 'Bea', email: 'bea@example.test' }))
  await page.locator('#token-form button').click()
  await page.locator('#live', { hasText: 'live' }).waitFor({ timeout: 15_000 })

  const shop = page.frameLocator('#shop')
  await shop.locator('.launcher').click()
  await shop.locator('textarea[aria-label="Type your message"]').fill('Where is my order?')
  await shop.locator('textarea[aria-label="Type your message"]').press('Enter')
  await page.locator('#list button', { hasText: 'Where is my order?' }).click({ timeout: 10_000 })

  await page.locator('#label-vip').click()
  await page.locator('#conversation-title', { hasText: '[VIP]' }).waitFor({ timeout: 10_000 })
  const [labelled] = await sql<{ names: string[] }[]>`
    SELECT array(SELECT l.name FROM labels l WHERE l.id = ANY(c.label_ids)) AS names FROM conversations c
    JOIN members m ON m.workspace_id = c.workspace_id WHERE m.user_id = 'demo|bea'`
  t.same(labelled?.names, ['VIP'], 'the label is on the conversation')

  const before = Date.now()
  await page.locator('#snooze').click()
  await page.locator('#list li', { hasText: 'No open conversations yet.' }).waitFor({ timeout: 10_000 })
  const [row] = await sql<{ status: string; until: number }[]>`
    SELECT c.status, extract(epoch FROM c.snoozed_until) * 1000 AS until FROM conversations c
    JOIN members m ON m.workspace_id = c.workspace_id WHERE m.user_id = 'demo|bea'`
  t.equal(row?.status, 'SNOOZED')
  const ahead = Number(row?.until) - before
  t.ok(ahead > 3500_000 && ahead < 3700_000, `snoozed about an hour ahead (${Math.round(ahead / 1000)} s)`)
})
