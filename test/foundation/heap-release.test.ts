import { spawnSync } from 'node:child_process'
import t from 'tap'

/**
 * releaseMemoryWhenIdle (src/heap.ts): after a burst, V8 keeps the pages it freed and the RSS stays
 * at the burst's high-water mark; once the process is idle the pages go back to the OS. Run in a
 * child process of its own (the test runner's heap is not the one measured), with a regular major
 * collection standing for the ones a burst of requests triggers.
 */
const root = new URL('../..', import.meta.url).pathname
const MiB = 1024 * 1024

const script = `
import { releaseMemoryWhenIdle } from './src/heap.ts'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const rss = () => process.memoryUsage.rss()
const releases = []
releaseMemoryWhenIdle(Number(process.env.IDLE_MS), (r) => releases.push(r))
// A burst: ~250 MiB of objects alive at once, then garbage.
let burst = []
for (let i = 0; i < 160; i++) burst.push(Array.from({ length: 10_000 }, (_, j) => ({ j, s: 'row ' + j })))
const peak = rss()
burst = null
gc()
const afterGc = rss()
// Busy for a second (the loop never idles): nothing may be released while work runs.
const busyUntil = Date.now() + 1000
while (Date.now() < busyUntil) await new Promise((r) => setImmediate(() => { const end = Date.now() + 5; while (Date.now() < end); r() }))
const releasedWhileBusy = releases.length
await sleep(1500)
console.log(JSON.stringify({ peak, afterGc, releasedWhileBusy, end: rss(), releases }))
`

function run(idleMs: number) {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    env: { PATH: process.env.PATH, IDLE_MS: String(idleMs) },
    encoding: 'utf8',
    timeout: 30_000,
  })
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as {
    peak: number
    afterGc: number
    releasedWhileBusy: number
    end: number
    releases: { rssBefore: number; rssAfter: number; ms: number }[]
  }
}

t.test('an idle process gives the pages of a burst back; a busy one does not', async (t) => {
  const on = run(200)
  t.ok(on.afterGc > on.peak - 60 * MiB, `a regular collection keeps the pages (peak ${on.peak / MiB | 0} MiB, after it ${on.afterGc / MiB | 0} MiB)`)
  t.equal(on.releasedWhileBusy, 0, 'nothing released while the event loop is busy')
  t.equal(on.releases.length, 1, 'one release once idle (the RSS did not grow again)')
  t.ok(on.releases[0].rssAfter < on.releases[0].rssBefore - 100 * MiB, `the release returned the pages (${on.releases[0].rssBefore / MiB | 0} -> ${on.releases[0].rssAfter / MiB | 0} MiB)`)
  t.ok(on.end < on.peak / 2, `the RSS at the end is under half the peak (${on.end / MiB | 0} of ${on.peak / MiB | 0} MiB)`)

  const off = run(0)
  t.equal(off.releases.length, 0, 'HEAP_RELEASE_IDLE_MS=0: never')
  t.ok(off.end > off.peak - 60 * MiB, `without it the RSS stays near the peak (${off.end / MiB | 0} of ${off.peak / MiB | 0} MiB)`)
})
