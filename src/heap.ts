import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * How far V8's old generation may grow past what the last major collection kept before the next
 * one: `percent`% (HEAP_GROWING_PERCENT; 0 leaves V8's own factor). V8 picks up to 4x by itself on
 * a machine with memory to spare, and under 50 connections the API's in-flight requests (promoted
 * because they live across database round trips) took ~55 MiB of live heap to 150-200 MiB between
 * collections: the RSS the benchmark read was that garbage. 150 (2.5x) measured at ~300 MiB of
 * peak RSS instead of ~380-425 for a few percent of CPU (docs/deployment.md, "Memory"). V8 reads
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

type Gc = (options: { type: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void

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
