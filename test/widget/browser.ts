import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { build, type BuildResult, type TestContext } from '../helper.js'
import { startGateway, testDatabaseAndPrefix, type GatewayProcess } from '../gateway/fixtures.js'

/**
 * Real-browser fixtures for the widget: Debian's chromium (installed by .ci/run with apt-get;
 * CHROMIUM_PATH overrides) driven by playwright-core, which downloads nothing. Playwright gives
 * every launch a fresh temporary profile (its own --user-data-dir), removed on close.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export async function launchBrowser(t: TestContext): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  t.teardown(() => browser.close())
  return browser
}

/** A fresh page in its own context (own localStorage), failing the test on the page's uncaught errors. */
export async function newPage(t: TestContext & { fail(msg: string): void }, browser: Browser): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.on('pageerror', (err) => t.fail(`page error: ${err.message}`))
  return page
}

export interface Stack extends BuildResult {
  apiUrl: string
  gateway: GatewayProcess
}

/** The API listening on a real port and one gateway process, on one database and Redis prefix. */
export async function startStack(t: TestContext, env: Record<string, string> = {}): Promise<Stack> {
  const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
  const gateway = await startGateway(t, { databaseUrl, redisPrefix, env })
  // The demo page points browsers at GATEWAY_PORT on its own host.
  const built = await build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix, GATEWAY_PORT: String(gateway.port), ...env } })
  await built.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = built.app.server.address() as AddressInfo
  return { ...built, apiUrl: `http://127.0.0.1:${port}`, gateway }
}

/** A customer's site: another origin (its own port) serving `pages` by path. */
export async function hostSite(t: TestContext, pages: Record<string, string>): Promise<string> {
  const server = createServer((req, res) => {
    const html = pages[(req.url ?? '/').split('?')[0]]
    res.writeHead(html === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(html ?? 'not found')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** The embed snippet a customer pastes, with what a logged-in shop knows about its visitor. */
export function snippet(stack: Stack, channel: { channelId: string; channelToken: string }, settings: Record<string, string> = {}): string {
  return `<script>window.parleySettings = ${JSON.stringify(settings)}</script>
<script src="${stack.apiUrl}/widget.js" data-channel-id="${channel.channelId}" data-channel-token="${channel.channelToken}" data-gateway-url="${stack.gateway.url}" async></script>`
}

/** Where screenshots go when WIDGET_SCREENSHOTS names a directory (docs/images for the README). */
export const SCREENSHOTS = process.env.WIDGET_SCREENSHOTS
