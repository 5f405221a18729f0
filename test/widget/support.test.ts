// The widget's support features in a real browser: its configuration (colour, greeting), the
// offline form when nobody is online, the rating after the agent resolves the conversation.
import t from 'tap'
import { seedWorkspace } from '../helper.js'
import { connect, eventually } from '../gateway/fixtures.js'
import { hostSite, launchBrowser, newPage, snippet, startStack } from './browser.js'

const stack = await startStack(t)
const { app } = stack
const { sql } = app.deps
const browser = await launchBrowser(t)

t.test('nobody online: the offline form takes the message and the e-mail, and the conversation it made is shown', async (t) => {
  const shop = await seedWorkspace(app, 'Quiet shop')
  const patch = await app.inject({
    method: 'PATCH',
    url: `/channels/${shop.channelId}`,
    headers: shop.owner.headers,
    payload: { widget: { color: '#0a7f3f', greeting: 'Welcome to the quiet shop', awayMessage: 'We are out fishing. Leave us a note.' } },
  })
  t.equal(patch.statusCode, 200)
  const site = await hostSite(t, { '/': `<!doctype html><title>Quiet</title><body>${snippet(stack, shop)}</body>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/')
  await page.locator('.launcher').click()
  t.equal(await page.locator('.launcher').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(10, 127, 63)', "the channel's colour")
  t.equal(await page.locator('.greeting').textContent(), 'Welcome to the quiet shop')
  t.equal(await page.locator('.status').textContent(), 'We are out fishing. Leave us a note.')

  const form = page.locator('form.offline')
  await form.waitFor()
  t.ok(await page.locator('form.composer').isHidden(), 'no chat composer while nobody is online')
  await page.getByLabel('Your e-mail').fill('otto@example.test')
  await page.getByLabel('Message', { exact: true }).fill('Is the green teapot back in stock?')
  await form.getByRole('button', { name: 'Send message' }).click()
  await page.locator('li.GUEST', { hasText: 'Is the green teapot back in stock?' }).waitFor()
  await page.locator('.note', { hasText: 'Thanks!' }).waitFor()

  const rows = await sql<{ email: string; body: string }[]>`
    SELECT g.email, m.body FROM conversations c JOIN guests g ON g.id = c.guest_id JOIN messages m ON m.conversation_id = c.id
    WHERE c.channel_id = ${shop.channelId}`
  t.same(rows, [{ email: 'otto@example.test', body: 'Is the green teapot back in stock?' }], 'one conversation, the guest has the address now')
})

t.test('the agent resolves the conversation: the rating appears, is stored, and is remembered after a reload', async (t) => {
  const shop = await seedWorkspace(app, 'Rated shop')
  const patch = await app.inject({ method: 'PATCH', url: `/channels/${shop.channelId}`, headers: shop.admin.headers, payload: { widget: { csatEnabled: true } } })
  t.equal(patch.statusCode, 200)
  // An agent online on the gateway: the widget offers the chat, not the offline form.
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const site = await hostSite(t, { '/': `<!doctype html><title>Rated</title><body>${snippet(stack, shop, { name: 'Rita' })}</body>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/')
  await page.locator('.launcher').click()
  t.ok(await page.locator('form.offline').isHidden())
  await page.getByLabel('Type your message').fill('My parcel arrived, thanks')
  await page.keyboard.press('Enter')
  await page.locator('li.GUEST[data-id]', { hasText: 'My parcel arrived' }).waitFor()
  const [c] = await sql<{ id: string }[]>`SELECT id FROM conversations WHERE channel_id = ${shop.channelId}`

  t.ok(await page.locator('form.csat').isHidden(), 'no rating while the conversation is open')
  const closed = await app.inject({ method: 'PATCH', url: `/conversations/${c.id}/close`, headers: shop.agent.headers })
  t.equal(closed.statusCode, 200)
  const card = page.locator('form.csat')
  await card.waitFor({ timeout: 10_000 })
  await card.getByRole('button', { name: '4 stars' }).click()
  t.equal(await card.getByRole('button', { name: '4 stars' }).getAttribute('aria-pressed'), 'true')
  await card.getByLabel('Comment (optional)').fill('Quick and kind')
  await card.getByRole('button', { name: 'Send rating' }).click()
  await page.locator('.csat', { hasText: 'Thanks for your rating (4 of 5).' }).waitFor()
  const ratings = await sql<{ rating: number; comment: string }[]>`SELECT rating, comment FROM csat_ratings WHERE conversation_id = ${c.id}`
  t.same(ratings, [{ rating: 4, comment: 'Quick and kind' }])

  await page.reload()
  await page.locator('.launcher').click()
  await page.locator('.csat', { hasText: 'Thanks for your rating (4 of 5).' }).waitFor()
  t.equal((await sql`SELECT 1 FROM csat_ratings WHERE conversation_id = ${c.id}`).length, 1, 'not asked twice')
})

t.test('page visits: the page the visitor reads, and each navigation of a single-page app, reach the visitor profile', async (t) => {
  const shop = await seedWorkspace(app, 'Visited shop')
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const site = await hostSite(t, { '/catalogue': `<!doctype html><title>Catalogue</title><body>${snippet(stack, shop, { name: 'Vic' })}</body>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/catalogue')
  await page.locator('.launcher').waitFor()
  const profile = async () => {
    const [guest] = await sql<{ id: string }[]>`SELECT id FROM guests WHERE channel_id = ${shop.channelId}`
    if (!guest) return undefined
    const res = await app.inject({ method: 'GET', url: `/visitors/${guest.id}`, headers: shop.agent.headers })
    return res.json() as { online: boolean; currentPage: { url: string; title: string } | null; pageVisits: { url: string }[] }
  }
  await eventually(async () => (await profile())?.currentPage?.url === `${site}/catalogue`, 10_000)
  t.match(await profile(), { online: true, currentPage: { url: `${site}/catalogue`, title: 'Catalogue' } })

  // A single-page app changes the URL without a load: the widget reports it (at most one a second).
  await page.evaluate(() => {
    document.title = 'Teapots'
    history.pushState({}, '', '/catalogue/teapots')
  })
  await eventually(async () => (await profile())?.currentPage?.url === `${site}/catalogue/teapots`, 10_000)
  const seen = await profile()
  t.equal(seen?.currentPage?.title, 'Teapots')
  t.ok(seen!.pageVisits.length >= 2, 'both pages are in the visits')

  // A page whose URL carries a reset token and an OAuth fragment: only origin and path reach agents.
  await page.evaluate(() => {
    document.title = 'Reset'
    history.pushState({}, '', '/reset?token=x#access_token=y')
  })
  await eventually(async () => (await profile())?.currentPage?.title === 'Reset', 10_000)
  const reset = await profile()
  t.equal(reset?.currentPage?.url, `${site}/reset`)
  t.notOk(JSON.stringify(reset).includes('token'), 'no token anywhere in the profile')
})

t.test('an unknown channel, or a wrong channel token, shows nothing and makes no guest', async (t) => {
  const shop = await seedWorkspace(app, 'Locked shop')
  await sql`UPDATE channels SET require_channel_token = true WHERE id = ${shop.channelId}`
  const unknown = { channelId: '0190b0a4-7c1e-7cc0-8000-000000000000', channelToken: 'ct_none' }
  const wrongToken = { channelId: shop.channelId, channelToken: 'ct_wrong' }
  for (const [name, channel] of [['unknown channel', unknown], ['wrong token', wrongToken]] as const) {
    const site = await hostSite(t, { '/': `<!doctype html><title>X</title><body>${snippet(stack, channel)}</body>` })
    const page = await newPage(t, browser)
    const warned = page.waitForEvent('console', (m) => m.type() === 'warning' && m.text().startsWith('Parley widget:'))
    await page.goto(site + '/')
    await warned
    t.equal(await page.locator('parley-widget').count(), 0, `${name}: no widget`)
  }
  t.equal((await sql`SELECT 1 FROM guests WHERE channel_id = ${shop.channelId}`).length, 0)
})
