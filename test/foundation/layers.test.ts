import t from 'tap'
import { checkLayers, importsOf, violation } from '../../scripts/check-layers.js'

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
