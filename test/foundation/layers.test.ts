import t from 'tap'
import {
  cardHelperViolations,
  checkLayers,
  codeLiteralViolations,
  codeLiterals,
  cyclesOf,
  drizzleImports,
  drizzleViolation,
  onUseViolation,
  importCycles,
  importsOf,
  runtimeImportsOf,
  violation,
} from '../../scripts/check-layers.js'

t.test('the layer rules hold in the repository (npm run lint runs the same check)', async (t) => {
  t.same(checkLayers(), [])
})

t.test('the check sees every kind of import and names the broken rule', async (t) => {
  t.same(
    importsOf(`import a from '../plugins/x.js'\nimport type { B } from 'fastify'\nexport { c } from './c.js'\nconst d = await import('../routes/d.js')`),
    ['../plugins/x.js', 'fastify', './c.js', '../routes/d.js'],
  )
  t.match(violation('src/conversations/x.ts', '../../plugins/deps.js'), /must not import plugins/)
  t.match(violation('src/health.ts', '../routes/health/index.js'), /must not import routes/)
  t.equal(violation('src/app.ts', '../plugins/deps.js'), null, 'the app factory assembles plugins')
  t.equal(violation('src/conversations/x.ts', '../db/client.js'), null)
  t.match(violation('plugins/cors.ts', '../routes/health/index.js'), /plugins\/ must not import routes/)
  t.match(violation('src/conversations/x.ts', 'fastify'), /must not import Fastify/)
  t.match(violation('src/billing/x.ts', '@fastify/rate-limit'), /must not import Fastify/)
  t.equal(violation('src/logger.ts', 'fastify'), null, "Fastify's logger options are built from its types")
})

t.test('the browser widget imports only itself and its Socket.IO client', async (t) => {
  t.match(violation('widget/src/widget.ts', '../../src/errors.js'), /browser code imports only widget/)
  t.match(violation('widget/demo/agent.ts', 'fastify'), /browser code imports only widget/)
  t.equal(violation('widget/src/widget.ts', './api.js'), null)
  t.equal(violation('widget/src/widget.ts', 'socket.io-client'), null)
  t.equal(violation('widget/build.ts', '../src/widget/bundle.js'), null, 'the build script is Node code')
})

t.test('schemas/ import only TypeBox, their siblings and the vocabularies of src/db/schema.ts', async (t) => {
  t.match(violation('schemas/conversations.ts', '../src/presence.js'), /schemas\/ imports only/)
  t.match(violation('schemas/auth.ts', '../src/errors.js'), /schemas\/ imports only/)
  t.match(violation('schemas/auth.ts', 'fastify'), /schemas\/ imports only/)
  t.match(violation('schemas/auth.ts', '../plugins/rate-limit.js'), /schemas\/ imports only/)
  t.equal(violation('schemas/conversations.ts', '../src/db/vocabulary.js'), null)
  t.match(violation('schemas/conversations.ts', '../src/db/schema.js'), /schemas\/ imports only/, 'the tables load drizzle-orm')
  t.equal(violation('schemas/search.ts', './conversations.js'), null)
  t.equal(violation('schemas/common.ts', '@sinclair/typebox'), null)
})

t.test("routes/ import schemas/, src/ and plugins/' declaration helpers, never another route", async (t) => {
  t.match(violation('routes/conversations/index.ts', './messages.js'), /never import another route/)
  t.match(violation('routes/auth/members.ts', '../conversations/index.js'), /never import another route/)
  t.match(violation('routes/auth/index.ts', '../../plugins/auth.js'), /declaration helpers of plugins/)
  t.match(violation('routes/auth/index.ts', '../../test/helper.js'), /import only schemas/)
  t.equal(violation('routes/auth/index.ts', '../../plugins/rate-limit.js'), null, 'limits')
  t.equal(violation('routes/auth/index.ts', '../../src/auth/bootstrap.js'), null)
  t.equal(violation('routes/auth/index.ts', '../../schemas/auth.js'), null)
  t.equal(violation('routes/uploads/index.ts', '@fastify/multipart'), null, 'packages are free')
})

t.test('type-only imports are not runtime edges', async (t) => {
  t.same(
    runtimeImportsOf(
      [
        "import type { A } from './a.js'",
        "import { type B, type C } from './b.js'",
        "import { type D, e } from './d.js'",
        "import f from './f.js'",
        "import './side-effect.js'",
        "export type { G } from './g.js'",
        "export { h } from './h.js'",
        "export * from './star.js'",
        "const i = await import('./lazy.js')",
      ].join('\n'),
    ),
    ['./d.js', './f.js', './side-effect.js', './h.js', './star.js'],
  )
})

t.test('the cycle finder names each runtime import cycle once, by its shortest way round', async (t) => {
  const graph = new Map([
    ['src/auth/bootstrap.ts', ['src/channels/channels.ts', 'src/errors.ts']],
    ['src/channels/channels.ts', ['src/support/widget-settings.ts', 'src/errors.ts']],
    ['src/support/widget-settings.ts', ['src/auth/bootstrap.ts', 'src/errors.ts']],
    ['src/errors.ts', []],
    ['src/self.ts', ['src/self.ts']],
  ])
  t.same(cyclesOf(graph), [
    ['src/auth/bootstrap.ts', 'src/channels/channels.ts', 'src/support/widget-settings.ts', 'src/auth/bootstrap.ts'],
    ['src/self.ts', 'src/self.ts'],
  ])
  graph.set('src/support/widget-settings.ts', ['src/auth/channel-token.ts', 'src/errors.ts'])
  graph.set('src/auth/channel-token.ts', ['src/errors.ts'])
  graph.set('src/self.ts', [])
  t.same(cyclesOf(graph), [], 'the shared part in a module of its own breaks the cycle')
  t.same(importCycles(), [], 'src/, plugins/ and schemas/ have none')
})

t.test('error codes are minted in src/errors.ts only', async (t) => {
  const head = "import { AppError, badRequest, forbidden } from '../errors.js'\n"
  t.match(codeLiteralViolations('src/attachments/uploads.ts', head + 'throw new AppError(413, code, message)'), [/new AppError/])
  t.match(codeLiteralViolations('src/auth/callers.ts', head + "throw forbidden('Not a member', 'NOT_A_MEMBER')"), [/'NOT_A_MEMBER' given to forbidden/])
  t.match(codeLiteralViolations('src/gateway/x.ts', "reply({ ok: false, code: 'RATE_LIMITED', message })"), [/'RATE_LIMITED' as a code/])
  t.match(codeLiteralViolations('src/gateway/x.ts', "throw new HandshakeError('UNAUTHENTICATED', msg)"), [/given to new HandshakeError/])
  t.match(codeLiteralViolations('src/area/x.ts', head + "\nthrow badRequest('m', 'NO_THUMBNAIL')"), [/^src\/area\/x\.ts:3: /], 'names the line')
  t.same(codeLiteralViolations('src/auth/callers.ts', head + "throw badRequest('x-workspace-id header is required')"), [], 'a factory with its own code')
  t.same(codeLiteralViolations('src/auth/callers.ts', head + 'throw notAMember()'), [])
  t.same(codeLiteralViolations('src/gateway/x.ts', "if (err.code === 'SESSION_REVOKED') refuse(err.code)"), [], 'reading a code')
  t.same(codeLiteralViolations('src/x.ts', "const status = 'OPEN'\nlog('GUEST')"), [], 'vocabulary values are not codes')
  t.same(codeLiteralViolations('src/x.ts', "import { badRequest } from './y.js'\nbadRequest('m', 'NOT_OURS')"), [], 'only factories of errors.ts')
  t.same(codeLiteralViolations('src/errors.ts', "export const x = () => new AppError(400, 'X_Y', 'm')"), [], 'errors.ts is their home')
  t.same(codeLiterals(), [], 'no place outside src/errors.ts mints one, the gateway included')
})

t.test("the design card's packages do one job: no second token check, no sensible errors", async (t) => {
  const route = `export default async (app) => {
  app.get('/a', async (request, reply) => {
    await request.jwtVerify()
    const x = await app.jwt.verify('t')
    if (!x) return reply.notFound()
    app.assert(x, 400)
    throw app.httpErrors.conflict()
  })
}`
  const found = cardHelperViolations('routes/a/index.ts', route)
  t.equal(found.length, 5, found.join('\n'))
  t.match(found[0], /routes\/a\/index.ts:3: `request.jwtVerify`: member tokens are verified through ctx.memberTokens/)
  t.match(found[1], /:4: `app.jwt`: routes never reach @fastify\/jwt/)
  t.match(found[2], /:5: `reply.notFound`: @fastify\/sensible's errors are not used/)
  t.match(found[3], /:6: `app.assert`/)
  t.match(found[4], /:7: `app.httpErrors`/)
  t.same(cardHelperViolations('plugins/deps.ts', 'const v = (token) => app.jwt.verify(token)'), [], 'plugins/deps.ts wraps app.jwt.verify')
  t.same(cardHelperViolations('routes/a.ts', "reply.cacheControl('no-store').vary('x-channel-token'); t.assert(true); forbidden('x')"), [], "sensible's caching helpers, other objects' assert and our factories pass")
})

t.test('the serving process never loads drizzle-orm (rule 10)', async (t) => {
  t.same(drizzleImports(), [])
  t.match(drizzleViolation('src/support/x.ts', '../db/schema.js'), /loads drizzle-orm: import its types with `import type`/)
  t.match(drizzleViolation('routes/billing/return.ts', '../../src/db/schema.js'), /vocabularies from src\/db\/vocabulary.ts/)
  t.match(drizzleViolation('src/server.ts', './db/migrate.js'), /the migrator with `await import\(\)`/)
  t.match(drizzleViolation('src/db/client.ts', 'drizzle-orm'), /only src\/db\/schema.ts and src\/db\/migrate.ts load drizzle-orm/)
  t.match(drizzleViolation('src/x.ts', 'drizzle-orm/pg-core'), /only src\/db\/schema.ts/)
  t.equal(drizzleViolation('src/db/schema.ts', 'drizzle-orm/pg-core'), null)
  t.equal(drizzleViolation('src/db/migrate-cli.ts', './migrate.js'), null, 'the migration command')
  t.equal(drizzleViolation('src/support/x.ts', '../db/vocabulary.js'), null)
  // Only runtime edges are checked: these are erased or run later.
  t.same(runtimeImportsOf(`import type { channels } from '../db/schema.js'\nimport { type WeekDay } from '../db/schema.js'\nconst m = await import('./db/migrate.js')`), [])
})

t.test('libraries only some deployments use are loaded on first use (rule 10)', async (t) => {
  t.match(onUseViolation('src/email/reader.ts', 'imapflow'), /imapflow is loaded on first use: `await import\('imapflow'\)`/)
  t.match(onUseViolation('src/email/parse.ts', 'mailparser'), /mailparser is loaded on first use/)
  t.match(onUseViolation('src/mail.ts', 'nodemailer'), /nodemailer is loaded on first use/)
  t.match(onUseViolation('src/deps.ts', '@aws-sdk/client-s3'), /only src\/storage\/s3.ts imports it statically/)
  t.match(onUseViolation('src/storage/storage.ts', './s3.js'), /src\/storage\/s3.ts is loaded on first use: `await import\('.\/s3.js'\)`/)
  t.equal(onUseViolation('src/storage/s3.ts', '@aws-sdk/client-s3'), null, 'the S3 driver itself')
  t.equal(onUseViolation('src/email/parse.ts', 'node:crypto'), null)
  t.equal(onUseViolation('src/email/reader.ts', 'imapflow-like'), null, 'a prefix of another name is not the library')
  // The repository holds no such import: the whole check (drizzle's half included) is clean.
  t.same(drizzleImports(), [])
  t.same(runtimeImportsOf(`import type { ImapFlow } from 'imapflow'\nconst { simpleParser } = await import('mailparser')`), [])
})
