import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { chmod, mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises'
import { once } from 'node:events'
import { dirname, join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import type { ByteRange, ObjectStorage } from './storage.js'

/** Stored files and their directories are Parley's user's only (API.md section 10). */
const DIR_MODE = 0o700
const FILE_MODE = 0o600
/**
 * The largest read of a file being served (fs.createReadStream's default is 64 KiB): a 200 KB
 * image is one read instead of four plus the one that finds the end, each a trip through libuv's
 * four-thread pool that every concurrent request queues for (issue 31: GET /media/:id's tail).
 */
const READ_MAX = 256 * 1024
/**
 * Bytes gathered before one write (a writev of the chunks as they came, no copy). Each write is a
 * trip through libuv's thread pool and back, two thread wake-ups: fs.createWriteStream wrote each
 * 64 KiB socket read on its own whenever no write was in flight (~77 writes per 10 MiB upload).
 * Memory: this much per upload being written.
 */
const WRITE_BATCH = 512 * 1024

/** Writes every byte of `chunks` at the file's position (writev may write less than asked). */
async function writeAll(file: FileHandle, chunks: Buffer[]) {
  let rest = chunks
  while (rest.length) {
    let { bytesWritten } = await file.writev(rest)
    while (rest.length && bytesWritten >= rest[0]!.length) bytesWritten -= rest.shift()!.length
    if (bytesWritten > 0) rest[0] = rest[0]!.subarray(bytesWritten)
  }
}

/**
 * `dir` and any missing parent under `root` (the root itself included), each 0700 whatever the
 * umask: mkdir's mode is filtered by it, so the mode is set again on every directory made.
 */
async function privateDir(dir: string, root: string) {
  const first = await mkdir(dir, { recursive: true, mode: DIR_MODE })
  if (first === undefined) return
  for (let d = dir; d.length >= first.length; d = dirname(d)) {
    await chmod(d, DIR_MODE)
    if (d === root || d === first) break
  }
}

/**
 * Files under one directory. A write goes to a temporary name beside its target and is renamed
 * into place only once complete (rename is atomic on one file system), so a reader never sees a
 * partial object and a failed write leaves nothing but the temporary file, which it removes.
 * Directories are 0700 and files 0600 (the root too: made so, or tightened on the first write).
 */
export function createLocalStorage(dir: string): ObjectStorage {
  const root = resolve(dir)
  let rootChecked: Promise<void> | null = null
  const ensureRoot = () =>
    (rootChecked ??= privateDir(root, root).then(() => chmod(root, DIR_MODE)).catch((err) => {
      rootChecked = null
      throw err
    }))
  const pathOf = (key: string) => {
    // Keys are Parley's own (uuid/uuid[.thumb]); refuse anything that could leave the root anyway.
    if (!/^[0-9a-zA-Z._/-]+$/.test(key) || key.split('/').some((p) => p === '' || p === '.' || p === '..')) {
      throw new Error('invalid storage key')
    }
    return join(root, key)
  }
  return {
    driver: 'local',
    async put(key, body, _contentType) {
      const target = pathOf(key)
      await ensureRoot()
      await privateDir(dirname(target), root)
      const part = `${target}.part-${randomBytes(6).toString('hex')}`
      try {
        const file = await open(part, 'wx', FILE_MODE)
        try {
          let batch: Buffer[] = []
          let bytes = 0
          // A failing body (client gone, limit crossed) throws here and is destroyed.
          for await (const chunk of body as AsyncIterable<Buffer>) {
            batch.push(chunk)
            bytes += chunk.length
            if (bytes < WRITE_BATCH) continue
            await writeAll(file, batch)
            batch = []
            bytes = 0
          }
          if (bytes > 0) await writeAll(file, batch)
          // The umask can only take bits away from 0600; set it exactly all the same.
          await file.chmod(FILE_MODE)
        } finally {
          await file.close()
        }
        await rename(part, target)
      } catch (err) {
        await rm(part, { force: true }).catch(() => {})
        throw err
      }
    },
    async get(key, range?: ByteRange, size?: number) {
      // A known end (the range's, or the size's) sizes the reads to it and spares the read at EOF.
      // (No position without one: a position makes every read a pread, which a pipe refuses.)
      const bounds = range ?? (size !== undefined && size > 0 ? { start: 0, end: size - 1 } : null)
      const highWaterMark = bounds ? Math.min(READ_MAX, Math.max(16 * 1024, bounds.end - bounds.start + 1)) : READ_MAX
      // Opened before it is returned: a missing file is null, not a stream that fails later.
      const stream = createReadStream(pathOf(key), bounds ? { ...bounds, highWaterMark } : { highWaterMark })
      try {
        await once(stream, 'open')
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw err
      }
      return stream as Readable
    },
    async delete(key) {
      await rm(pathOf(key), { force: true })
    },
    async exists(key) {
      try {
        return (await stat(pathOf(key))).isFile()
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
        throw err
      }
    },
    presignGet: async () => null,
    close() {},
  }
}
