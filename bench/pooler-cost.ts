// What PgBouncer (transaction mode, Debian's 1.18) costs the list and search queries, at the
// database client (docs/scaling.md): the same domain code on three pools of 10 connections,
// 50 concurrent callers for --duration seconds each:
//   direct:          postgres.js to PostgreSQL, named prepared statements (the default);
//   direct unprep.:  the same without prepared statements (what DATABASE_POOLER=transaction sets);
//   pgbouncer:       through a pgbouncer started here (pool_mode=transaction, 10 server connections).
// Usage: node --import tsx bench/pooler-cost.ts --db <a database kept by npm run bench -- --keep-db> [--duration 8]
import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.js'
import { createSql, type Pool } from '../src/db/client.js'
import { SEARCH_SESSION, searchConversations } from '../src/search/search.js'
import { benchOwner, scriptContext } from './lib/context.js'
import { listPageOne } from './list-sql.js'

const { values } = parseArgs({ options: { db: { type: 'string' }, duration: { type: 'string', default: '8' }, server: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' } } })
if (!values.db) throw new Error('--db NAME: a database kept by npm run bench -- --keep-db')
const durationMs = Number(values.duration) * 1000
const direct = `${values.server}/${values.db}`

const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port
    s.close(() => resolve(p))
  })
})
const dir = mkdtempSync(join(tmpdir(), 'parley-pooler-cost-'))
// pgbouncer runs as the postgres OS user when we are root: it must write its log here.
chmodSync(dir, 0o777)
const target = new URL(direct)
writeFileSync(join(dir, 'pgbouncer.ini'), `[databases]
${values.db} = host=${target.hostname} port=${target.port || 5432} dbname=${values.db} user=${target.username}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
logfile = ${join(dir, 'log')}
`)
const bouncer = spawn('pgbouncer', process.getuid?.() === 0 ? ['-u', 'postgres', join(dir, 'pgbouncer.ini')] : [join(dir, 'pgbouncer.ini')], { stdio: 'ignore' })
await new Promise((r) => setTimeout(r, 1000))

async function measure(name: string, url: string, prepare: boolean, pooled: boolean) {
  const sql: Pool = createSql(url, 10, pooled ? {} : SEARCH_SESSION, prepare)
  const [{ id: ws }] = await sql<{ id: string }[]>`SELECT workspace_id AS id FROM conversations GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`
  const config = loadConfig({ ...process.env, AUTH_JWT_SECRET: 'x'.repeat(32), VISITOR_SESSION_SECRET: 'y'.repeat(32), DATABASE_POOLER: pooled ? 'transaction' : 'none' })
  const ctx = scriptContext(sql, config, benchOwner(ws!))
  const out: Record<string, number> = {}
  const words = ['quokkaflux', 'refund', 'order', 'delivery', 'invoice', 'password', 'shipping', 'account']
  for (const [scenario, op] of [
    ['list page 1', () => listPageOne(sql, ws!)],
    ['search varied', (i: number) => searchConversations(ctx, { q: `${words[i % words.length]}`, limit: 20 })],
  ] as const) {
    for (let i = 0; i < 200; i++) await op(i) // warm-up
    let n = 0
    const until = Date.now() + durationMs
    await Promise.all(Array.from({ length: 50 }, async (_, w) => {
      while (Date.now() < until) {
        await op(n + w)
        n++
      }
    }))
    out[scenario] = n / (durationMs / 1000)
  }
  await sql.end({ timeout: 2 })
  console.log(`${name.padEnd(16)} ${Object.entries(out).map(([k, v]) => `${k}: ${v.toFixed(0)}/s`).join('   ')}`)
  return out
}

try {
  const a = await measure('direct', direct, true, false)
  const b = await measure('direct unprep.', direct, false, false)
  const c = await measure('pgbouncer', `postgres://${target.username}@127.0.0.1:${port}/${values.db}`, false, true)
  for (const k of Object.keys(a)) console.log(`${k}: pgbouncer ÷ direct ${(c[k]! / a[k]!).toFixed(2)}, unprepared ÷ direct ${(b[k]! / a[k]!).toFixed(2)}`)
} finally {
  bouncer.kill('SIGTERM')
  rmSync(dir, { recursive: true, force: true })
}
