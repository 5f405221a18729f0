/**
 * The two ceilings the list endpoint is compared with, each a minimal server run as its own
 * process like the API:
 *   framework: bare Fastify answering a constant object of the list page's size (serialised per
 *              request, as the API must): what the framework alone can do on this machine.
 *   sql:       bare Fastify running the list endpoint's SQL through postgres.js (same pool
 *              settings as the API), no auth, no validation: what the database allows.
 *   file:      bare Fastify streaming one file with fs.createReadStream, no auth, no lookup:
 *              what serving a stored attachment costs at the least (GET /media/:id's ceiling).
 * Usage: node --import tsx bench/ceiling-server.ts framework|sql|file  (env: PORT, BODY_FILE or
 * DATABASE_URL + WORKSPACE_ID + DATABASE_POOL_MAX, or FILE_PATH + FILE_TYPE)
 */
import { createReadStream, readFileSync } from 'node:fs'
import Fastify from 'fastify'
import { ConfigSchema } from '../src/config.js'
import { createSql } from '../src/db/client.js'
import { limitHeapGrowth } from '../src/heap.js'
import { listPageOne } from './list-sql.js'

// The API's old-generation growth (its default, or HEAP_GROWING_PERCENT as the bench passes it);
// the API's NODE_OPTIONS come in the environment: the same garbage collector on both sides.
limitHeapGrowth(Number(process.env.HEAP_GROWING_PERCENT ?? ConfigSchema.properties.HEAP_GROWING_PERCENT.default))

const mode = process.argv[2]
const app = Fastify({ logger: false })
app.get('/ready', async () => ({ ok: true }))

if (mode === 'framework') {
  const page = JSON.parse(readFileSync(process.env.BODY_FILE!, 'utf8'))
  app.get('/list', async () => page)
} else if (mode === 'sql') {
  // PLAN_CACHE_MODE (diagnostic): the same SQL with generic plans, to see what planning costs.
  const url = new URL(process.env.DATABASE_URL!)
  if (process.env.PLAN_CACHE_MODE) url.searchParams.set('plan_cache_mode', process.env.PLAN_CACHE_MODE)
  const sql = createSql(url.toString(), Number(process.env.DATABASE_POOL_MAX ?? 10))
  const workspaceId = process.env.WORKSPACE_ID!
  // LIST_QUERY (JSON): list parameters of the page (the triage ceilings: labelIds, sortBy=priority).
  const query = process.env.LIST_QUERY ? JSON.parse(process.env.LIST_QUERY) : {}
  app.get('/list', async () => {
    const { rows, more } = await listPageOne(sql, workspaceId, 20, query)
    return { data: rows, nextCursor: more ? 'x' : null }
  })
  app.addHook('onClose', async () => sql.end({ timeout: 5 }))
} else if (mode === 'file') {
  const path = process.env.FILE_PATH!
  const type = process.env.FILE_TYPE ?? 'application/octet-stream'
  app.get('/file', (_request, reply) => reply.header('content-type', type).send(createReadStream(path)))
} else {
  console.error('usage: ceiling-server.ts framework|sql|file')
  process.exit(2)
}

process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
