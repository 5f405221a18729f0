/**
 * The rollup upsert of one event (flushRollups, the write path's statement), timed over rolled
 * back transactions; `dir` is the worktree whose src/analytics/record.ts to use, so two versions
 * can be alternated. Usage: node --import tsx bench/rollup-write-cost.ts <db> <dir> <kind> [runs]
 */
import postgres from 'postgres'
const [db, dir, kind, runsArg] = process.argv.slice(2)
const { flushRollups } = await import(`${dir}/src/analytics/record.ts`)
const sql = postgres(`postgres://postgres@127.0.0.1:5432/${db}`, { max: 1 })
const [c] = await sql`SELECT workspace_id AS "workspaceId", channel_id AS "channelId", agent_id AS "agentId", team_id AS "teamId" FROM metric_events WHERE kind = 'first_response' ORDER BY occurred_at DESC LIMIT 1`
const times: number[] = []
for (let i = 0; i < Number(runsArg ?? 300); i++) {
  const ev = { ...c, kind, value: kind === 'first_response' ? 30 + (i % 500) * 7.3 : null, occurredAt: new Date(Date.now() - (i % 20) * 86_400_000).toISOString() }
  await sql.begin(async (tx) => {
    const t0 = performance.now()
    await flushRollups(tx, [ev])
    times.push(performance.now() - t0)
    throw new Error('rollback')
  }).catch(() => {})
}
times.sort((a, b) => a - b)
console.log(`${kind}: median ${times[times.length >> 1].toFixed(2)} ms, p90 ${times[Math.floor(times.length * 0.9)].toFixed(2)} ms over ${times.length}`)
await sql.end()
