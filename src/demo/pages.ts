import { isSingleProcess } from '../config.js'
import type { Ctx } from '../context.js'
import { demoUnavailable } from '../errors.js'
import { escapeHtml } from '../html.js'

/**
 * The development demo: GET /demo (a fictional shop with the widget, beside a minimal agent pane
 * using the member API) and GET /demo/shop (the shop alone, in the demo's frame). Refused in
 * production (NODE_ENV=production): a 404 like any unknown route.
 */
export function assertDemoAllowed(ctx: Ctx): void {
  if (ctx.config.NODE_ENV === 'production') throw demoUnavailable()
}

/**
 * Where the demo's browser scripts find the gateway: the page's own origin in single-process mode
 * (the gateway shares the API's server), else GATEWAY_PORT on the page's host (`npm run gateway`).
 */
const gatewayScript = (ctx: Ctx) =>
  isSingleProcess(ctx.config)
    ? `document.body.dataset.gatewayUrl = location.origin;`
    : `document.body.dataset.gatewayUrl = location.protocol + '//' + location.hostname + ':' + ${Number(ctx.config.GATEWAY_PORT)};`

const STYLE = `
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: #1d2330; }
.muted { color: #57606a; }
`

export function demoPage(ctx: Ctx): string {
  assertDemoAllowed(ctx)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley demo</title>
<style>${STYLE}
main { display: grid; grid-template-columns: 1fr 380px; height: 100vh; }
iframe { width: 100%; height: 100%; border: 0; border-right: 1px solid #d0d7de; }
aside { padding: 16px; overflow-y: auto; background: #f6f8fa; }
h1 { font-size: 18px; margin: 0 0 8px; } h2 { font-size: 15px; margin: 16px 0 6px; }
input, textarea { width: 100%; box-sizing: border-box; font: inherit; padding: 6px; border: 1px solid #d0d7de; border-radius: 6px; }
button { font: inherit; padding: 5px 10px; border-radius: 6px; border: 1px solid #d0d7de; background: #fff; cursor: pointer; margin-top: 6px; }
ul { list-style: none; padding: 0; margin: 0; } #list button { width: 100%; text-align: left; }
#list button[aria-current="true"] { border-color: #1f6feb; background: #ddf4ff; }
#thread li { padding: 4px 0; border-bottom: 1px solid #eaeef2; } #thread li.AGENT { color: #0969da; }
code { background: #eaeef2; padding: 1px 4px; border-radius: 4px; }
.placeholder { display: grid; place-items: center; height: 100%; color: #57606a; padding: 24px; text-align: center; }
</style></head>
<body>
<main>
  <iframe id="shop" title="Demo shop with the Parley widget" srcdoc="<p style='font:15px system-ui;padding:24px;color:#57606a'>Paste a member token on the right: the shop appears here with its chat widget.</p>"></iframe>
  <aside aria-label="Agent pane">
    <h1>Agent pane</h1>
    <p class="muted">Get a development token with <code>npm run token -- --sub alice --name Alice</code>.</p>
    <form id="token-form"><label for="token">Member token</label><input id="token" autocomplete="off" required><button type="submit">Sign in</button></form>
    <p id="status" class="muted" role="status"></p>
    <p class="muted"><span id="workspace"></span> Gateway: <span id="live">not connected</span></p>
    <h2>Open conversations</h2>
    <ul id="list" aria-label="Open conversations"></ul>
    <section id="conversation" hidden aria-labelledby="conversation-title">
      <h2 id="conversation-title"></h2>
      <ul id="thread" aria-label="Messages" aria-live="polite"></ul>
      <form id="reply-form"><label for="reply">Reply</label><textarea id="reply" rows="3"></textarea><button type="submit">Send reply</button></form>
      <button id="close" type="button">Close conversation</button>
      <button id="label-vip" type="button">Label VIP</button>
      <button id="snooze" type="button">Snooze 1 hour</button>
    </section>
  </aside>
</main>
<script>${gatewayScript(ctx)}</script>
<script src="/demo/agent.js"></script>
</body></html>`
}

export function shopPage(ctx: Ctx, query: { channelId: string; channelToken?: string }, widgetHash: string): string {
  assertDemoAllowed(ctx)
  const products = [
    ['Ember Espresso', 'Dark roast, notes of cocoa and cherry', '14.00'],
    ['Morning Fjord', 'Light roast from a fictional highland farm', '12.50'],
    ['Decaf Dusk', 'Swiss-water decaf, caramel and almond', '13.00'],
    ['Pour-over kit', 'Dripper, filters and a small kettle', '39.00'],
  ]
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Northwind Roasters (a fictional shop)</title>
<style>${STYLE}
header { background: #3b2a20; color: #fff; padding: 18px 28px; } header h1 { margin: 0; font-size: 22px; }
.hero { padding: 28px; background: #f3ebe3; } .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 16px; padding: 28px; }
.card { border: 1px solid #e2d6cb; border-radius: 10px; padding: 14px; } .card h2 { font-size: 16px; margin: 0 0 4px; }
.price { font-weight: 700; }
</style></head>
<body>
<header><h1>Northwind Roasters</h1><span class="muted" style="color:#e2d6cb">A fictional shop for the Parley demo</span></header>
<section class="hero"><p>Freshly roasted coffee, shipped every Monday. Questions about an order? Use the chat in the corner.</p></section>
<section class="grid" aria-label="Products">
${products.map(([name, text, price]) => `<article class="card"><h2>${escapeHtml(name)}</h2><p class="muted">${escapeHtml(text)}</p><p class="price">€${price}</p></article>`).join('\n')}
</section>
<div id="embed" data-channel-id="${escapeHtml(query.channelId)}" data-channel-token="${escapeHtml(query.channelToken ?? '')}"></div>
<script>
${gatewayScript(ctx)}
// The shop's signed-in customer, as a real shop would pass it (docs/widget.md, "Embedding").
window.parleySettings = { name: 'Dana (demo customer)', email: 'dana@example.test' };
// The snippet a customer pastes, built here only to point it at the demo's gateway port.
var d = document.getElementById('embed').dataset, s = document.createElement('script');
s.src = '/widget.js?v=${escapeHtml(widgetHash)}'; s.async = true;
s.dataset.channelId = d.channelId; if (d.channelToken) s.dataset.channelToken = d.channelToken;
s.dataset.gatewayUrl = document.body.dataset.gatewayUrl;
document.body.appendChild(s);
</script>
</body></html>`
}
