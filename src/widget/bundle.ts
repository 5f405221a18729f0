import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

/**
 * widget.js: the browser widget (widget/src, TypeScript) bundled with its Socket.IO client into
 * one minified file. Under tsx (development, tests, `npm start` from a clone) it is built in
 * memory with esbuild on first use; the compiled image serves the file `npm run build` wrote
 * (dist/widget/widget.js, and the demo's dist/widget/demo-agent.js), so production needs neither
 * esbuild nor the sources.
 */
export interface WidgetBundle {
  code: Buffer
  /** First 16 hex digits of the code's sha256: the ETag and the `?v=` of a cache-busting URL. */
  hash: string
}

const compiled = !import.meta.url.endsWith('.ts')
const root = new URL('../../', import.meta.url) // the repository, or dist/ when compiled
export const PREBUILT = fileURLToPath(new URL('widget/widget.js', root))

/** Bundles widget/src/index.ts (minified, one IIFE, no legal comments). */
export const buildWidget = () => bundle('widget/src/index.ts')

/** Bundles a browser entry of the repository (a path under widget/) into one minified IIFE. */
async function bundle(entry: string): Promise<Buffer> {
  const { build } = await import('esbuild')
  const result = await build({
    entryPoints: [fileURLToPath(new URL(entry, root))],
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome100', 'firefox100', 'safari15'],
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  })
  return Buffer.from(result.outputFiles[0].contents)
}

let pending: Promise<WidgetBundle> | undefined

/** The bundle, built or read once per process (a failure is retried by the next call). */
export function widgetBundle(): Promise<WidgetBundle> {
  pending ??= (compiled ? readFile(PREBUILT) : buildWidget()).then((code) => ({
    code,
    hash: createHash('sha256').update(code).digest('hex').slice(0, 16),
  }))
  pending.catch(() => (pending = undefined))
  return pending
}

/**
 * Caching: the embed snippet's URL never changes, so `/widget.js` is cached briefly and
 * revalidated by its ETag (the content hash); `/widget.js?v=<hash>` names one build and is
 * immutable. A `v` of another build gets the current code with the short policy.
 */
export function cacheControl(bundle: WidgetBundle, v: string | undefined): string {
  return v === bundle.hash ? 'public, max-age=31536000, immutable' : 'public, max-age=300, stale-while-revalidate=3600'
}

/** Whether an If-None-Match header names this bundle's ETag (weak or strong, or `*`). */
export function notModified(bundle: WidgetBundle, ifNoneMatch: string | undefined): boolean {
  if (!ifNoneMatch) return false
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '')
    return tag === '*' || tag === `"${bundle.hash}"`
  })
}

let agent: Promise<Buffer> | undefined

export const buildDemoAgent = () => bundle('widget/demo/agent.ts')
export const PREBUILT_DEMO_AGENT = fileURLToPath(new URL('widget/demo-agent.js', root))

/** The demo's agent pane script (widget/demo/agent.ts): built on first use, or read when compiled. */
export function demoAgentBundle(): Promise<Buffer> {
  agent ??= compiled ? readFile(PREBUILT_DEMO_AGENT) : buildDemoAgent()
  agent.catch(() => (agent = undefined))
  return agent
}
