/**
 * The import rules of docs/architecture.md ("Layers"), checked on every `npm run lint`:
 * 1. Nothing under src/ imports from plugins/ or routes/, except the entry points that assemble
 *    the HTTP app or a process.
 * 2. Domain code (src/, except those entry points and the two helpers that format Fastify's own
 *    logger options and validation errors) never imports Fastify, not even its types.
 * 3. plugins/ never imports routes/ (routes are autoloaded, never imported).
 * 4. The browser code (widget/src, widget/demo) imports only widget/ itself and socket.io-client:
 *    it is bundled into customers' pages and uses the public contract, never the server's code.
 * 5. schemas/ imports only @sinclair/typebox, its siblings and the vocabularies (src/db/vocabulary.ts).
 * 6. routes/ import only schemas/, src/ and the declaration helpers of plugins/ (`limits`), never
 *    another route (packages are free).
 * 7. No runtime import cycle among src/, plugins/ and schemas/: a module's top level runs before
 *    the modules that import it, so a cycle makes evaluation order matter. Type-only edges
 *    (`import type`, `export type`, every name `type X`) are erased and do not count; neither do
 *    dynamic `import()`s, which run later.
 * 8. Error codes are minted in src/errors.ts only: elsewhere no `new AppError(`, and no
 *    SCREAMING_SNAKE literal as a code (an argument of an errors.ts factory or of `new XError(`,
 *    or a `code:` property). Reading a code (`err.code === 'X'`) is fine.
 * 9. The design card's Fastify packages do their one job (docs/architecture.md, "The design
 *    card's packages"): member tokens are verified through ctx.memberTokens (plugins/jwt.ts), so
 *    nothing calls @fastify/jwt's request.jwtVerify/jwtDecode or reply.jwtSign and routes never
 *    reach `app.jwt`; errors come from src/errors.ts, so nothing uses @fastify/sensible's
 *    httpErrors, its reply helpers (`reply.notFound()`, ...), `app.assert` or `app.to`.
 * 10. The serving process never loads drizzle-orm (docs/deployment.md, "Memory": ~80-120 MiB of
 *    resident memory and ~0.5 s at start): at run time only src/db/schema.ts and src/db/migrate.ts
 *    import it, and nothing imports those two at run time but the migration command
 *    (src/db/migrate-cli.ts); src/server.ts imports the migrator with `import()` when it migrates.
 *    Type-only imports of src/db/schema.ts (row types) are erased and free. Likewise the
 *    libraries only some deployments use are loaded with `await import()` where first used, never
 *    by a static import (ON_USE_LIBRARIES: the e-mail channel's IMAP, parsing and SMTP clients;
 *    the AWS SDK, from src/storage/s3.ts, itself imported only with `import()`).
 * Exits 1 naming each offending import.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { httpErrors } from '@fastify/sensible'
import ts from 'typescript'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** May import plugins/ and routes/: the app factory and the process entry points. */
export const ENTRY_POINTS = new Set(['src/app.ts', 'src/server.ts', 'src/gateway/server.ts', 'src/db/migrate-cli.ts'])
/** May import Fastify's types and compilers: they build its logger options, its validators and serializers, and word its validation errors. */
export const FASTIFY_EDGE = new Set(['src/logger.ts', 'src/validation.ts', 'src/serialization.ts'])

const FASTIFY = /^(fastify|fastify-plugin|@fastify\/.*)$/
/** What schemas/ may take from src/: the stored vocabularies. */
export const VOCABULARIES = 'src/db/vocabulary.ts'
/** What routes/ may take from plugins/: the helpers a declaration uses (`limits`). */
export const DECLARATION_HELPERS = new Set(['plugins/rate-limit.ts'])
/** Where error codes are minted (rule 8). */
export const CODE_HOME = 'src/errors.ts'

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

/** A relative specifier as the repository path of its TypeScript source (`./a.js` -> `dir/a.ts`), else null. */
export function targetOf(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null
  return relative(root, resolve(root, dirname(file), specifier)).replace(/\.js$/, '.ts')
}

/** The layer rule a file's import breaks, or null. `file` and the result are relative to the repository. */
export function violation(file: string, specifier: string): string | null {
  const target = targetOf(file, specifier)
  const layer = target?.split('/')[0]
  if (file.startsWith('src/') && !ENTRY_POINTS.has(file)) {
    if (layer === 'plugins' || layer === 'routes') return `src/ must not import ${layer}/ (only ${[...ENTRY_POINTS].join(', ')} may)`
    if (FASTIFY.test(specifier) && !FASTIFY_EDGE.has(file)) return 'domain code must not import Fastify (take a Ctx, not a request)'
  }
  if (file.startsWith('plugins/') && layer === 'routes') return 'plugins/ must not import routes/ (routes are autoloaded)'
  if (file.startsWith('schemas/')) {
    if (target ? layer !== 'schemas' && target !== VOCABULARIES : specifier !== '@sinclair/typebox') {
      return `schemas/ imports only @sinclair/typebox, its siblings and the vocabularies of ${VOCABULARIES}`
    }
  }
  if (file.startsWith('routes/') && target) {
    if (layer === 'routes') return 'routes/ never import another route (each is autoloaded on its own)'
    if (layer === 'plugins' ? !DECLARATION_HELPERS.has(target) : layer !== 'schemas' && layer !== 'src') {
      return `routes/ import only schemas/, src/ and the declaration helpers of plugins/ (${[...DECLARATION_HELPERS].join(', ')})`
    }
  }
  if (/^widget\/(src|demo)\//.test(file)) {
    if (target ? !target.startsWith('widget/') : specifier !== 'socket.io-client') {
      return 'browser code imports only widget/ and socket.io-client (it runs on customers\' sites)'
    }
  }
  return null
}

/** The specifiers a file imports or re-exports at run time: static, and not type-only (rule 7). */
export function runtimeImportsOf(text: string): string[] {
  const source = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, false)
  const out: string[] = []
  for (const node of source.statements) {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined
      const typeOnly =
        clause !== undefined && (clause.isTypeOnly || (!clause.name && named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly)))
      if (!typeOnly) out.push(node.moduleSpecifier.text)
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined
      const typeOnly = node.isTypeOnly || (named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly))
      if (!typeOnly) out.push(node.moduleSpecifier.text)
    }
  }
  return out
}

/** Each cycle of a directed graph (one per strongly connected component), as a path `a, b, ..., a`. */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, then the shortest way round each component from its first member.
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component.sort())
    }
  }
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v)
  return components.map((component) => {
    const members = new Set(component)
    const start = component[0]
    const came = new Map<string, string>()
    const queue = [start]
    while (queue.length > 0) {
      const v = queue.shift()!
      for (const w of graph.get(v) ?? []) {
        if (!members.has(w) || came.has(w)) continue
        came.set(w, v)
        if (w === start) queue.length = 0
        else queue.push(w)
      }
    }
    const path = [start]
    for (let v = came.get(start)!; v !== start; v = came.get(v)!) path.unshift(v)
    path.unshift(start)
    return path
  })
}

/** The modules that load drizzle-orm, and who may import each at run time (rule 10). */
export const DRIZZLE_MODULES: Record<string, Set<string>> = {
  'src/db/schema.ts': new Set(),
  'src/db/migrate.ts': new Set(['src/db/migrate-cli.ts']),
}

/** Rule 10 for one runtime (static, not type-only) import of `file`, or null. */
export function drizzleViolation(file: string, specifier: string): string | null {
  if (/^drizzle-orm(\/|$)/.test(specifier) && !(file in DRIZZLE_MODULES)) {
    return `only ${Object.keys(DRIZZLE_MODULES).join(' and ')} load drizzle-orm (the API process must not: docs/deployment.md, "Memory")`
  }
  const target = targetOf(file, specifier)
  if (target && target in DRIZZLE_MODULES && !DRIZZLE_MODULES[target]!.has(file)) {
    return `${target} loads drizzle-orm: import its types with \`import type\`, the vocabularies from ${VOCABULARIES}${target === 'src/db/migrate.ts' ? ', the migrator with `await import()`' : ''}`
  }
  return null
}

/**
 * Libraries only some deployments use (rule 10; docs/deployment.md, "What the serving process
 * loads"), each with the one module that may import it statically; null: none may.
 */
export const ON_USE_LIBRARIES: Record<string, string | null> = {
  imapflow: null,
  mailparser: null,
  nodemailer: null,
  '@aws-sdk/': 'src/storage/s3.ts',
  'src/storage/s3.ts': null,
}

/** Rule 10's second half for one runtime import of `file`: a static import of an on-use library, or null. */
export function onUseViolation(file: string, specifier: string): string | null {
  const target = targetOf(file, specifier) ?? specifier
  for (const [lib, owner] of Object.entries(ON_USE_LIBRARIES)) {
    const hit = lib.endsWith('/') ? target.startsWith(lib) : target === lib || target.startsWith(`${lib}/`)
    if (hit && owner !== file) {
      return `${lib} is loaded on first use: \`await import('${specifier}')\` where it is needed${owner ? ` (only ${owner} imports it statically)` : ''}, types with \`import type\``
    }
  }
  return null
}

/** Every runtime import that would load drizzle-orm or an on-use library into the API process (rule 10). */
export function drizzleImports(): string[] {
  const out: string[] = []
  for (const dir of ['src', 'plugins', 'routes', 'schemas']) {
    for (const file of files(dir)) {
      for (const specifier of runtimeImportsOf(readFileSync(join(root, file), 'utf8'))) {
        const why = drizzleViolation(file, specifier) ?? onUseViolation(file, specifier)
        if (why) out.push(`${file}: imports '${specifier}' at run time: ${why}`)
      }
    }
  }
  return out
}

/** Runtime import cycles among src/, plugins/ and schemas/, one line each (rule 7). */
export function importCycles(): string[] {
  const graph = new Map<string, string[]>()
  for (const dir of ['src', 'plugins', 'schemas']) {
    for (const file of files(dir)) {
      const edges = runtimeImportsOf(readFileSync(join(root, file), 'utf8'))
        .map((specifier) => targetOf(file, specifier))
        .filter((target): target is string => target !== null && /^(src|plugins|schemas)\//.test(target))
        .map((target) => (existsSync(join(root, target)) ? target : join(target.replace(/\.ts$/, ''), 'index.ts')))
      graph.set(file, edges)
    }
  }
  return cyclesOf(graph).map((cycle) => `runtime import cycle: ${cycle.join(' -> ')} (make type-only edges \`import type\`, or move the shared part)`)
}

const CODE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/

/**
 * Rule 8: where `file` mints an error code outside src/errors.ts, one line each. A code is a
 * SCREAMING_SNAKE string given to a factory imported from errors.ts, to `new XError(...)`, or as
 * a `code:` property; `new AppError(` is refused whatever its arguments.
 */
export function codeLiteralViolations(file: string, text: string): string[] {
  if (file === CODE_HOME) return []
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const factories = new Set<string>()
  for (const node of source.statements) {
    if (!ts.isImportDeclaration(node) || !ts.isStringLiteral(node.moduleSpecifier)) continue
    if (targetOf(file, node.moduleSpecifier.text) !== CODE_HOME) continue
    const named = node.importClause?.namedBindings
    if (named && ts.isNamedImports(named)) for (const e of named.elements) factories.add(e.name.text)
  }
  const out: string[] = []
  const at = (node: ts.Node, what: string) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source))
    out.push(`${file}:${line + 1}: ${what} (error codes are minted in ${CODE_HOME}: add a factory there)`)
  }
  const isCode = (node: ts.Node) => (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && CODE.test(node.text)
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression)) {
      const name = node.expression.text
      if (name === 'AppError') at(node, '`new AppError(`')
      else if (/Error$/.test(name)) for (const arg of node.arguments ?? []) if (isCode(arg)) at(arg, `code '${(arg as ts.StringLiteral).text}' given to new ${name}`)
    } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && factories.has(node.expression.text)) {
      for (const arg of node.arguments) if (isCode(arg)) at(arg, `code '${(arg as ts.StringLiteral).text}' given to ${node.expression.text}()`)
    } else if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === 'code' && isCode(node.initializer)) {
      at(node.initializer, `code '${(node.initializer as ts.StringLiteral).text}' as a code: property`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out
}

/** Every place outside src/errors.ts that mints an error code (rule 8). */
export function codeLiterals(): string[] {
  const out: string[] = []
  for (const dir of ['src', 'plugins', 'routes']) {
    for (const file of files(dir)) out.push(...codeLiteralViolations(file, readFileSync(join(root, file), 'utf8')))
  }
  return out
}

/** @fastify/sensible's error helpers, decorated on the reply under these names (rule 9). */
const SENSIBLE_ERRORS = new Set([...Object.keys(httpErrors), 'assert', 'to'])
/** The Fastify objects those helpers hang on, as routes and plugins name them. */
const FASTIFY_OBJECTS = new Set(['reply', 'app', 'fastify', 'instance', 'this'])

/** Rule 9: where `file` uses a second way to verify a token or to make an error, one line each. */
export function cardHelperViolations(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const out: string[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node)) {
      const name = node.name.text
      const on = node.expression.kind === ts.SyntaxKind.ThisKeyword ? 'this' : ts.isIdentifier(node.expression) ? node.expression.text : ''
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source))
      const where = `${file}:${line + 1}: \`${node.getText(source)}\``
      if (['jwtVerify', 'jwtDecode', 'jwtSign'].includes(name)) out.push(`${where}: member tokens are verified through ctx.memberTokens (plugins/jwt.ts)`)
      else if (name === 'jwt' && file.startsWith('routes/')) out.push(`${where}: routes never reach @fastify/jwt (ctx.memberTokens)`)
      else if (name === 'httpErrors' || name === 'getHttpError' || (SENSIBLE_ERRORS.has(name) && FASTIFY_OBJECTS.has(on) && ts.isCallExpression(node.parent))) {
        out.push(`${where}: @fastify/sensible's errors are not used (errors come from ${CODE_HOME})`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out
}

/** Every broken rule in the repository, one line each. */
export function checkLayers(): string[] {
  const problems: string[] = []
  for (const dir of ['src', 'plugins', 'routes', 'schemas', 'widget']) {
    for (const file of files(dir)) {
      for (const specifier of importsOf(readFileSync(join(root, file), 'utf8'))) {
        const why = violation(file, specifier)
        if (why) problems.push(`${file}: imports '${specifier}': ${why}`)
      }
    }
  }
  for (const dir of ['src', 'plugins', 'routes']) {
    for (const file of files(dir)) problems.push(...cardHelperViolations(file, readFileSync(join(root, file), 'utf8')))
  }
  return [...problems, ...importCycles(), ...codeLiterals(), ...drizzleImports()]
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkLayers()
  if (problems.length > 0) {
    console.error(`Layer check failed (docs/architecture.md, "Layers"):\n${problems.map((p) => `  ${p}`).join('\n')}`)
    process.exit(1)
  }
}
