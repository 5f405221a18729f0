// The widget in a real browser (chromium through playwright-core) on a customer's page of another
// origin, against the real API and a real gateway process.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { seedWorkspace } from '../helper.js'
import { connect } from '../gateway/fixtures.js'
import { hostSite, launchBrowser, newPage, snippet, startStack } from './browser.js'

// A short presence TTL: the gateway rechecks sessions every heartbeat (TTL / 5).
const stack = await startStack(t, { PRESENCE_TTL_S: '4', MEMBER_CACHE_TTL_MS: '0' })
const { app } = stack
const { sql } = app.deps
const browser = await launchBrowser(t)

const shadowFocus = `document.querySelector('parley-widget').shadowRoot.activeElement?.getAttribute('aria-label') ?? null`

/** A shop page whose own styles try hard to break any widget put on it. */
const hostilePage = (body: string) => `<!doctype html><html><head><title>Acme shop</title><style>
  * { font-family: "Comic Sans MS", cursive !important; color: red !important; }
  button { background: red !important; font-size: 40px !important; }
  div, section, ol, li { display: none !important; }
</style></head><body><h1>Acme shop</h1>${body}</body></html>`

t.test('on another origin: a visitor writes, the agent answers over REST, the reply shows live; the badge counts while closed; a reload resumes', async (t) => {
  const acme = await seedWorkspace(app, 'Acme')
  await connect(t, stack.gateway.url, { token: acme.agent.token, workspaceId: acme.workspaceId }) // someone is online
  const site = await hostSite(t, { '/': hostilePage(snippet(stack, acme, { name: 'Wanda Widget', email: 'wanda@example.test' })) })
  const page = await newPage(t, browser)
  await page.goto(site + '/')

  const launcher = page.locator('.launcher')
  await launcher.waitFor()
  t.equal(await launcher.getAttribute('aria-label'), 'Open chat')
  t.equal(await launcher.getAttribute('aria-expanded'), 'false')
  const style = await launcher.evaluate((el) => getComputedStyle(el).backgroundColor)
  t.equal(style, 'rgb(31, 111, 235)', "the page's button rule does not reach into the shadow root")

  // Keyboard only: focus the launcher, Enter opens the panel with the focus in the message box.
  await launcher.focus()
  await page.keyboard.press('Enter')
  await page.locator('.panel').waitFor({ state: 'visible' })
  t.equal(await launcher.getAttribute('aria-expanded'), 'true')
  t.equal(await page.evaluate(shadowFocus), 'Type your message')
  t.equal(await page.locator('.panel').evaluate((el) => getComputedStyle(el).display), 'flex', 'the page\'s display:none on section does not hide it')

  await page.keyboard.type('Hello from the widget')
  await page.keyboard.press('Enter')
  await page.locator('li.GUEST[data-id]', { hasText: 'Hello from the widget' }).waitFor()

  const [guest] = await sql<{ id: string; name: string; email: string }[]>`SELECT id, name, email FROM guests WHERE channel_id = ${acme.channelId}`
  t.match(guest, { name: 'Wanda Widget', email: 'wanda@example.test' }, 'POST /auth made the guest from the host page settings')
  const [conversation] = await sql<{ id: string }[]>`SELECT id FROM conversations WHERE guest_id = ${guest.id}`
  const stored = await sql<{ body: string; senderType: string; clientMessageId: string | null }[]>`
    SELECT body, sender_type AS "senderType", client_message_id AS "clientMessageId" FROM messages WHERE conversation_id = ${conversation.id}`
  t.equal(stored.length, 1)
  t.match(stored[0], { body: 'Hello from the widget', senderType: 'GUEST', clientMessageId: /^[0-9a-f-]{36}$/ })

  const reply = await app.inject({ method: 'POST', url: `/conversations/${conversation.id}/messages`, headers: acme.agent.headers, payload: { body: 'Hi Wanda, how can I help?' } })
  t.equal(reply.statusCode, 201)
  await page.locator('li.AGENT', { hasText: 'Hi Wanda, how can I help?' }).waitFor({ timeout: 10_000 })
  t.match(await page.locator('li.AGENT .who').first().textContent(), 'Agnes Agent', "the agent's name is shown")

  // Escape closes and gives the focus back to the launcher; the next reply raises the badge.
  await page.keyboard.press('Escape')
  await page.locator('.panel').waitFor({ state: 'hidden' })
  t.equal(await page.evaluate(shadowFocus), 'Open chat')
  await app.inject({ method: 'POST', url: `/conversations/${conversation.id}/messages`, headers: acme.agent.headers, payload: { body: 'Are you still there?' } })
  await page.locator('.badge', { hasText: '1' }).waitFor({ timeout: 10_000 })
  t.equal(await launcher.getAttribute('aria-label'), 'Open chat, 1 unread message')

  // A reload resumes the same guest and conversation from localStorage (no new guest).
  await page.reload()
  await page.locator('.badge', { hasText: '1' }).waitFor()
  await page.locator('.launcher').click()
  await page.locator('li.AGENT', { hasText: 'Are you still there?' }).waitFor()
  t.equal(await page.locator('li').count(), 3, 'the whole conversation is back')
  t.ok(await page.locator('.badge').isHidden(), 'opening clears the badge')
  await page.keyboard.type('Yes, still here')
  await page.keyboard.press('Enter')
  await page.locator('li.GUEST[data-id]', { hasText: 'Yes, still here' }).waitFor()
  t.equal((await sql`SELECT 1 FROM guests WHERE channel_id = ${acme.channelId}`).length, 1, 'one guest')
  t.equal((await sql`SELECT 1 FROM conversations WHERE guest_id = ${guest.id}`).length, 1, 'one conversation')
  t.equal((await sql`SELECT 1 FROM messages WHERE conversation_id = ${conversation.id}`).length, 4)
})

t.test('a send whose answer is lost is retried with the same clientMessageId: one message, shown once', async (t) => {
  const shop = await seedWorkspace(app, 'Retry shop')
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const site = await hostSite(t, { '/': `<!doctype html><title>Shop</title><body>${snippet(stack, shop, { email: 'ray@example.test' })}</body>` })
  const page = await newPage(t, browser)
  let dropped = 0
  // The first POST of a message reaches the API, but the browser never sees the answer.
  await page.route('**/conversations/*/messages', async (route) => {
    if (route.request().method() !== 'POST' || dropped > 0) return route.continue()
    dropped++
    await route.fetch()
    await route.abort('connectionreset')
  })
  await page.goto(site + '/')
  await page.locator('.launcher').click()
  await page.locator('textarea[aria-label="Type your message"]').fill('Only once, please')
  await page.keyboard.press('Enter')
  await page.locator('li.GUEST[data-id]', { hasText: 'Only once, please' }).waitFor({ timeout: 15_000 })
  // The gateway's copy may show first; the retry's answer then resolves the pending bubble.
  await page.locator('li.pending').waitFor({ state: 'detached', timeout: 15_000 })
  t.equal(dropped, 1, 'the first answer was lost')
  const rows = await sql<{ body: string }[]>`
    SELECT m.body FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.channel_id = ${shop.channelId}`
  t.same(rows.map((r) => r.body), ['Only once, please'])
  t.equal(await page.locator('li', { hasText: 'Only once, please' }).count(), 1)
})

t.test("the host page's identity hash makes a verified guest, found again from another browser", async (t) => {
  const shop = await seedWorkspace(app, 'Identity shop')
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const email = 'ida@example.test'
  const identityHash = createHmac('sha256', shop.identitySecret).update(email).digest('hex')
  const site = await hostSite(t, { '/': `<!doctype html><title>Account</title><body>${snippet(stack, shop, { name: 'Ida', email, identityHash })}</body>` })

  const first = await newPage(t, browser)
  await first.goto(site + '/')
  await first.locator('.launcher').click()
  await first.getByLabel('Type your message').fill('Where is order 42?')
  await first.keyboard.press('Enter')
  await first.locator('li.GUEST[data-id]', { hasText: 'Where is order 42?' }).waitFor()
  const guests = await sql<{ verified: boolean; email: string }[]>`SELECT verified, email FROM guests WHERE channel_id = ${shop.channelId}`
  t.same(guests, [{ verified: true, email }])

  // Another browser (no localStorage): the same logged-in customer resumes the verified guest and its conversation.
  const second = await newPage(t, browser)
  await second.goto(site + '/')
  await second.locator('.launcher').click()
  await second.locator('li.GUEST[data-id]', { hasText: 'Where is order 42?' }).waitFor()
  t.equal((await sql`SELECT 1 FROM guests WHERE channel_id = ${shop.channelId}`).length, 1, 'one guest')
})

t.test('the channel is deactivated while a visitor is on the page: the gateway drops the session and the widget goes away', async (t) => {
  const shop = await seedWorkspace(app, 'Closing shop')
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const site = await hostSite(t, { '/': `<!doctype html><title>Closing</title><body>${snippet(stack, shop, { email: 'cleo@example.test' })}</body>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/')
  await page.locator('.launcher').click()
  await page.getByLabel('Type your message').fill('Are you closing down?')
  await page.keyboard.press('Enter')
  await page.locator('li.GUEST[data-id]', { hasText: 'Are you closing down?' }).waitFor()
  const off = await app.inject({ method: 'PATCH', url: `/channels/${shop.channelId}`, headers: shop.owner.headers, payload: { active: false } })
  t.equal(off.statusCode, 200)
  await page.locator('parley-widget').waitFor({ state: 'detached', timeout: 15_000 })
  t.equal((await sql`SELECT 1 FROM guests WHERE channel_id = ${shop.channelId}`).length, 1, 'no new guest for a closed channel')
})
