/**
 * Entry of widget.js. Embedding:
 *   <script src="https://parley.example/widget.js" data-channel-id="..." data-channel-token="..." async></script>
 * Optional: data-gateway-url (default: the script's own origin, where a single-process server or
 * a proxy routing /socket.io answers), and the logged-in visitor as data-name, data-email,
 * data-identity-hash or `window.parleySettings = { name, email, identityHash }` set before it.
 */
import { Widget } from './widget.js'

declare global {
  interface Window {
    parleySettings?: { name?: string; email?: string; identityHash?: string }
    __parleyWidget?: boolean
  }
}

function boot(script: HTMLScriptElement): void {
  const d = script.dataset
  const channelId = d.channelId
  if (!channelId) return console.warn('Parley widget: data-channel-id is missing')
  const apiUrl = new URL(script.src, location.href).origin
  const settings = window.parleySettings ?? {}
  const widget = new Widget({
    apiUrl,
    gatewayUrl: d.gatewayUrl || apiUrl,
    channelId,
    channelToken: d.channelToken || undefined,
    name: settings.name ?? d.name,
    email: settings.email ?? d.email,
    identityHash: settings.identityHash ?? d.identityHash,
  })
  const start = () => void widget.start().catch((err: unknown) => console.warn('Parley widget:', err))
  if (document.body) start()
  else document.addEventListener('DOMContentLoaded', start, { once: true })
}

// currentScript is set while a classic (also async) script runs; a snippet pasted twice boots once.
const script = (document.currentScript as HTMLScriptElement | null) ?? document.querySelector<HTMLScriptElement>('script[data-channel-id][src*="widget.js"]')
if (script && !window.__parleyWidget) {
  window.__parleyWidget = true
  boot(script)
}
