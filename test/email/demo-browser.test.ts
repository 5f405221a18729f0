// GET /demo in a real browser: the agent pane shows an e-mail conversation with its subject, and
// a reply's delivery moving to sent (message:updated over the gateway).
import t from 'tap'
import { memberToken } from '../helper.js'
import { launchBrowser, newPage, startStack } from '../widget/browser.js'
import { fast, startSmtp, waitFor } from '../transcripts/smtp.js'
import { mailThread, SMTP_AUTH } from './fixtures.js'

t.test('in a browser: an e-mail conversation in the agent pane, with its subject and delivery', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  const stack = await startStack(t, fast)
  const browser = await launchBrowser(t)
  const page = await newPage(t, browser)
  const token = await memberToken('demo|erin', { name: 'Erin', email: 'erin@example.test' })
  await page.goto(`${stack.apiUrl}/demo`)
  await page.locator('#token').fill(token)
  await page.locator('#token-form button').click()
  await page.locator('#live', { hasText: 'live' }).waitFor({ timeout: 15_000 })
  const [ws] = await stack.app.deps.sql<{ id: string }[]>`SELECT workspace_id AS id FROM members WHERE user_id = 'demo|erin'`
  const th = await mailThread(stack.app, smtp.port, {
    workspaceId: ws!.id,
    admin: { headers: { authorization: `Bearer ${token}`, 'x-workspace-id': ws!.id } },
  })
  // A new conversation arrives: the pane refreshes on the next event; reload to pick it up now.
  await page.reload()
  await page.locator('#live', { hasText: 'live' }).waitFor({ timeout: 15_000 })
  const entry = page.locator('#list button', { hasText: 'Re: Order #123 never arrived' })
  await entry.waitFor({ timeout: 10_000 })
  t.match(await entry.textContent(), /^\u2709 Re: Order #123 never arrived \u00b7 Gina Guest/, 'the subject leads the list entry')
  await entry.click()
  await page.locator('#conversation-title', { hasText: '<gina@example.test>' }).waitFor({ timeout: 10_000 })
  t.match(await page.locator('#conversation-title').textContent(), /Re: Order #123 never arrived · Gina Guest <gina@example\.test> \(OPEN\)/)
  // The shop's widget still runs on the web channel, not the e-mail one.
  const shopSrc = (await page.locator('#shop').getAttribute('src')) ?? ''
  t.match(shopSrc, /channelId=/)
  t.notOk(shopSrc.includes(th.channelId))

  await page.locator('#reply').fill('It left our roastery today.')
  await page.locator('#reply-form button').click()
  await page.locator('#thread li', { hasText: 'It left our roastery today. (sent)' }).waitFor({ timeout: 20_000 })
  await waitFor(() => smtp.mails.length === 1)
  t.equal(smtp.mails[0]!.subject, `Re: Order #123 never arrived [#${th.ref}]`)
})
