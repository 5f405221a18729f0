import { performance } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * How far V8's old generation may grow past what the last major collection kept before the next
 * one: `percent`% (HEAP_GROWING_PERCENT; 0 leaves V8's own factor). V8 picks up to 4x by itself on
 * a machine with memory to spare, and under 50 connections the API's in-flight requests (promoted
 * because they live across database round trips) took ~55 MiB of live heap to 150-200 MiB between
 * collections: the RSS the benchmark read was that garbage. 150 (2.5x) measured at ~300 MiB of
 * peak RSS instead of ~380-425 for a few percent of CPU, 100 (the default since 2026-11-27) 20-45
 * MiB under 150 for ~6% of the priority list's throughput (docs/deployment.md, "Memory"). V8 reads
 * the flag at each collection, so setting it at start is enough; it is not allowed in NODE_OPTIONS.
 */
export function limitHeapGrowth(percent: number) {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`)
}

/**
 * A scavenge (V8's young-generation collection) after every BODY_BYTES_PER_SCAVENGE bytes of an
 * uploaded file read (the upload inspector counts them; docs/attachments.md, "Third round").
 *
 * Node's HTTP parser hands every socket read of a body to JavaScript as a new Buffer (~64 KiB of
 * memory outside V8's heap; no option changes it). They die within milliseconds, and a scavenge
 * frees them for the cost of the few young objects still alive; but scavenges come with the heap's
 * own allocation, which an upload barely does (none in 20 uploads of 10 MiB), and V8 answered the
 * growth of that outside memory with full mark-compacts of the whole heap instead: 6-13 per 20
 * uploads, each 50-130 ms of main-thread marking. Asked for, the scavenge frees the same buffers
 * for ~1 ms. When V8 is already marking the whole heap, it serves the request by finishing that
 * marking (a mark-compact it had started anyway, its remaining steps in one pause).
 */
const BODY_BYTES_PER_SCAVENGE = 16 * 1024 * 1024

type Gc = (options: { type: 'minor' | 'major'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => void

/**
 * V8's `gc` function, taken from a context of its own: the flag is on only while that context is
 * made, so no other code (nor the global object) gets it.
 */
function takeGc(): Gc | null {
  if (typeof (globalThis as { gc?: unknown }).gc === 'function') return (globalThis as unknown as { gc: Gc }).gc
  try {
    setFlagsFromString('--expose-gc')
    return runInNewContext('gc') as Gc
  } catch {
    return null
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}

let gc: Gc | null | undefined
let sinceScavenge = 0

/** Counts `bytes` of request body read; every BODY_BYTES_PER_SCAVENGE of them, one scavenge. */
export function bodyBytesRead(bytes: number) {
  sinceScavenge += bytes
  if (sinceScavenge < BODY_BYTES_PER_SCAVENGE) return
  sinceScavenge = 0
  gc ??= takeGc()
  gc?.({ type: 'minor' })
}

/** The event loop's share of busy time below which an interval counts as idle. */
const IDLE_UTILIZATION = 0.05
/** Growth of the RSS since the last release that is worth a release. */
const RELEASE_STEP_BYTES = 16 * 1024 * 1024

/**
 * Gives the memory a burst of work left behind back to the operating system once the process has
 * been idle for `idleMs` (HEAP_RELEASE_IDLE_MS; 0: never).
 *
 * After a collection V8 keeps the pages it freed, pooled for its next allocations, and only a
 * memory-reducing collection unmaps them; V8's own memory reducer schedules one when the embedder
 * reports idleness, which Node never does. So the RSS of a server only ever climbs to the sum of
 * every burst's high-water marks (docs/deployment.md, "Memory"). Every `idleMs` this looks at the
 * event loop's utilization over the interval: when it was idle and the RSS has grown by
 * RELEASE_STEP_BYTES since the last release, it runs V8's last-resort collection (a full
 * compaction that also returns the pooled pages; ~10-100 ms, while nothing is waiting).
 */
export function releaseMemoryWhenIdle(idleMs: number, onRelease?: (release: { rssBefore: number; rssAfter: number; ms: number }) => void): () => void {
  if (idleMs <= 0) return () => {}
  let floor = process.memoryUsage.rss()
  let last = performance.eventLoopUtilization()
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const busy = performance.eventLoopUtilization(now, last).utilization
    last = now
    const rssBefore = process.memoryUsage.rss()
    if (busy >= IDLE_UTILIZATION || rssBefore < floor + RELEASE_STEP_BYTES) {
      floor = Math.min(floor, rssBefore)
      return
    }
    gc ??= takeGc()
    if (!gc) return
    const t0 = performance.now()
    gc({ type: 'major', flavor: 'last-resort' })
    floor = process.memoryUsage.rss()
    // The collection itself made the loop busy: the next interval starts after it.
    last = performance.eventLoopUtilization()
    onRelease?.({ rssBefore, rssAfter: floor, ms: performance.now() - t0 })
  }, idleMs)
  timer.unref()
  return () => clearInterval(timer)
}
