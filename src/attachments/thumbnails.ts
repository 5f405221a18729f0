import type { Config } from '../config.js'

/** Whether an image's size (known at upload, from its header) is past THUMBNAIL_MAX_PIXELS: it never gets a thumbnail. */
export const tooLargeForThumbnail = (config: Pick<Config, 'THUMBNAIL_MAX_PIXELS'>, width: number | null, height: number | null) =>
  width != null && height != null && width * height > config.THUMBNAIL_MAX_PIXELS

/**
 * Thumbnails made in this process (API.md section 2, "thumbnails made"): at most `concurrency`
 * at once, the others wait in arrival order; requests for the same attachment while one is
 * waiting or being made share it (one decode, one answer for all). Decoding an image costs its
 * whole pixel buffer (a 40-megapixel image: 120 MB and more), so this bounds the memory
 * thumbnails may take, whatever the number of requests.
 */
export interface ThumbnailMaker {
  /** `make()` for attachment `id`, in a free slot; a request for an `id` already queued or running joins it. */
  run(id: string, make: () => Promise<string>): Promise<string>
  /** What is going on (tests, diagnostics): the ids being made, how many wait, makes started, requests that joined one. */
  stats(): { running: string[]; waiting: number; started: number; joined: number }
}

export function createThumbnailMaker(concurrency: number): ThumbnailMaker {
  const inFlight = new Map<string, Promise<string>>()
  const running = new Set<string>()
  const queue: (() => void)[] = []
  let started = 0
  let joined = 0

  async function slot(id: string, make: () => Promise<string>): Promise<string> {
    if (running.size >= concurrency) await new Promise<void>((resolve) => queue.push(resolve))
    running.add(id)
    started++
    try {
      return await make()
    } finally {
      running.delete(id)
      queue.shift()?.()
    }
  }

  return {
    run(id, make) {
      const current = inFlight.get(id)
      if (current) {
        joined++
        return current
      }
      const p = slot(id, make).finally(() => inFlight.delete(id))
      inFlight.set(id, p)
      return p
    },
    stats: () => ({ running: [...running], waiting: queue.length, started, joined }),
  }
}
