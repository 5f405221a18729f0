import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm, stat } from 'node:fs/promises'
import { once } from 'node:events'
import { dirname, join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ByteRange, ObjectStorage } from './storage.js'

/**
 * Files under one directory. A write goes to a temporary name beside its target and is renamed
 * into place only once complete (rename is atomic on one file system), so a reader never sees a
 * partial object and a failed write leaves nothing but the temporary file, which it removes.
 */
export function createLocalStorage(dir: string): ObjectStorage {
  const root = resolve(dir)
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
      await mkdir(dirname(target), { recursive: true })
      const part = `${target}.part-${randomBytes(6).toString('hex')}`
      try {
        await pipeline(body, createWriteStream(part, { flags: 'wx', highWaterMark: 256 * 1024 }))
        await rename(part, target)
      } catch (err) {
        await rm(part, { force: true }).catch(() => {})
        throw err
      }
    },
    async get(key, range?: ByteRange) {
      // Opened before it is returned: a missing file is null, not a stream that fails later.
      const stream = createReadStream(pathOf(key), range ? { start: range.start, end: range.end } : {})
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
