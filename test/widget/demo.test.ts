// GET /demo: the development demo (a fictional shop with the widget, a minimal agent pane using
// the member API), refused in production. test/widget/demo-browser.test.ts drives it in a browser.
import t from 'tap'
import { build } from '../helper.js'

t.test('production refuses every demo route with the 404 of an unknown route', async (t) => {
  const { app } = await build(t, { env: { NODE_ENV: 'production' } })
  for (const url of ['/demo', '/demo/agent.js', '/demo/shop?channelId=0190b0a4-7c1e-7cc0-8000-000000000000']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
    t.same(res.json(), { statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: 'The demo is not served in production' })
  }
  const widget = await app.inject({ method: 'GET', url: '/widget.js' })
  t.equal(widget.statusCode, 200, 'the widget itself is served in production')
})

t.test('outside production: the pages, their inputs validated and escaped', async (t) => {
  const { app } = await build(t)
  const demo = await app.inject({ method: 'GET', url: '/demo' })
  t.equal(demo.statusCode, 200)
  t.match(demo.headers['content-type'], /^text\/html/)
  t.match(demo.payload, /npm run token/)
  const agent = await app.inject({ method: 'GET', url: '/demo/agent.js' })
  t.equal(agent.statusCode, 200)
  t.match(agent.headers['content-type'], /^text\/javascript/)
  const channelId = '0190b0a4-7c1e-7cc0-8000-000000000000'
  const shop = await app.inject({ method: 'GET', url: `/demo/shop?channelId=${channelId}&channelToken=ct_abc` })
  t.equal(shop.statusCode, 200)
  t.match(shop.payload, `data-channel-id="${channelId}"`)
  t.match(shop.payload, /\/widget\.js\?v=[0-9a-f]{16}/)
  for (const url of ['/demo/shop', '/demo/shop?channelId=nope', `/demo/shop?channelId=${channelId}&channelToken=%22%3E%3Cscript%3E`, `/demo/shop?channelId=${channelId}&x=1`]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
})
