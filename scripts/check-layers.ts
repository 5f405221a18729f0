/**
 * The import rules of docs/architecture.md ("Layers"), checked on every `npm run lint`:
 * 1. Nothing under src/ imports from plugins/ or routes/, except the entry points that assemble
 *    the HTTP app or a process.
 * 2. Domain code (src/, except those entry points and the two helpers that format Fastify's own
 *    logger options and validation errors) never imports Fastify, not even its types.
 * 3. plugins/ never imports routes/ (routes are autoloaded, never imported).
 * 4. The browser code (widget/src, widget/demo) imports only widget/ itself and socket.io-client:
 *    it is bundled into customers' pages and uses the public contract, never the server's code.
 * Exits 1 naming each offending import.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** May import plugins/ and routes/: the app factory and the process entry points. */
export const ENTRY_POINTS = new Set(['src/app.ts', 'src/server.ts', 'src/gateway/server.ts', 'src/db/migrate-cli.ts'])
/** May import Fastify's types: they build its logger options and word its validation errors. */
export const FASTIFY_EDGE = new Set(['src/logger.ts', 'src/validation.ts'])

const FASTIFY = /^(fastify|fastify-plugin|@fastify\/.*)$/

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* files(path)
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name)) yield path
  }
}

/** Every module specifier a file imports or re-exports (static, dynamic and type-only). */
export function importsOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName)
}

/** The layer rule a file's import breaks, or null. `file` and the result are relative to the repository. */
export function violation(file: string, specifier: string): string | null {
  const target = specifier.startsWith('.') ? relative(root, resolve(root, dirname(file), specifier)) : null
  const layer = target?.split('/')[0]
  if (file.startsWith('src/') && !ENTRY_POINTS.has(file)) {
    if (layer === 'plugins' || layer === 'routes') return `src/ must not import ${layer}/ (only ${[...ENTRY_POINTS].join(', ')} may)`
    if (FASTIFY.test(specifier) && !FASTIFY_EDGE.has(file)) return 'domain code must not import Fastify (take a Ctx, not a request)'
  }
  if (file.startsWith('plugins/') && layer === 'routes') return 'plugins/ must not import routes/ (routes are autoloaded)'
  if (/^widget\/(src|demo)\//.test(file)) {
    if (target ? !target.startsWith('widget/') : specifier !== 'socket.io-client') {
      return 'browser code imports only widget/ and socket.io-client (it runs on customers\' sites)'
    }
  }
  return null
}

/** Every broken rule in the repository, one line each. */
export function checkLayers(): string[] {
  const problems: string[] = []
  for (const dir of ['src', 'plugins', 'widget']) {
    for (const file of files(dir)) {
      for (const specifier of importsOf(readFileSync(join(root, file), 'utf8'))) {
        const why = violation(file, specifier)
        if (why) problems.push(`${file}: imports '${specifier}': ${why}`)
      }
    }
  }
  return problems
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkLayers()
  if (problems.length > 0) {
    console.error(`Layer check failed (docs/architecture.md, "Layers"):\n${problems.map((p) => `  ${p}`).join('\n')}`)
    process.exit(1)
  }
}
