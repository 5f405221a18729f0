/**
 * Page latency of the list routes through the whole app (app.inject: routing, auth, validation,
 * SQL, serialisation) on the database bench/lists-explain.ts leaves behind:
 *   EXPLAIN_DB=parley_lists_explain node --import tsx bench/lists-explain.ts
 *   node --import tsx bench/lists-latency.ts
 */
import { buildApp } from '../src/app.js'
import { memberToken, testEnv } from '../test/helper.js'

const NAME = process.env.EXPLAIN_DB ?? 'parley_lists_explain'
const url = new URL(process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
url.pathname = `/${NAME}`
const WS = '11111111-1111-4111-8111-111111111111'

const app = await buildApp({ env: testEnv({ DATABASE_URL: url.toString(), REDIS_PREFIX: `bench:${process.pid}:` }), logger: false })
await app.ready()
const headers = { authorization: `Bearer ${await memberToken('agent-7')}`, 'x-workspace-id': WS }

async function walk(path: string, pages: number): Promise<number[]> {
  const times: number[] = []
  let cursor: string | null = null
  for (let i = 0; i < pages; i++) {
    const t0 = performance.now()
    const res: { statusCode: number; body: string; json(): any } = await app.inject({ url: `${path}${path.includes('?') ? '&' : '?'}limit=20${cursor ? `&cursor=${cursor}` : ''}`, headers })
    times.push(performance.now() - t0)
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`)
    cursor = res.json().nextCursor
    if (!cursor) break
  }
  return times
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!
for (const path of [
  '/conversations',
  '/conversations?sortBy=createdAt&sortOrder=asc',
  '/conversations?readStatus=unread',
  '/conversations/Myconversation',
  '/conversations/closed',
  '/conversations/closed?sortBy=updatedAt&sortOrder=asc',
]) {
  await walk(path, 5) // warm-up
  const times = await walk(path, 300)
  console.log(`${path.padEnd(55)} ${times.length} pages  p50 ${pct(times, 50).toFixed(2)} ms  p95 ${pct(times, 95).toFixed(2)} ms  max ${Math.max(...times).toFixed(2)} ms`)
}
const t = performance.now()
for (let i = 0; i < 50; i++) await app.inject({ url: '/conversations/available-agents', headers })
console.log(`/conversations/available-agents  mean ${((performance.now() - t) / 50).toFixed(2)} ms`)
await app.close()
