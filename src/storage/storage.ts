import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import { createLocalStorage } from './local.js'

/** A byte range, both ends inclusive (HTTP's `bytes=start-end`). */
export interface ByteRange {
  start: number
  end: number
}

/**
 * Where attachment bytes live (docs/attachments.md). Two drivers pass one test suite
 * (test/storage/storage.test.ts): local disk and any S3-compatible store. Keys are made by Parley
 * only (`<workspaceId>/<attachmentId>`), never from input. Every method rejects with the driver's
 * own error when the store cannot be reached; callers turn that into 503 STORAGE_UNAVAILABLE.
 */
export interface ObjectStorage {
  readonly driver: 'local' | 's3'
  /**
   * Streams `body` to `key`: the object exists once this resolves, and a write that fails or whose
   * body errors (client gone, limit crossed) leaves no object, partial or whole.
   */
  put(key: string, body: Readable, contentType: string): Promise<void>
  /**
   * The object's bytes (or a range of them) as a stream; null when there is no such object.
   * `size`: the object's size when the caller knows it (the attachment's row): the local driver
   * then reads a small file in one read, and never reads again to find its end.
   */
  get(key: string, range?: ByteRange, size?: number): Promise<Readable | null>
  /** Removes the object; removing a missing one is not an error (cleanup is idempotent). */
  delete(key: string): Promise<void>
  exists(key: string): Promise<boolean>
  /**
   * A URL the store itself answers for `expiresInS` seconds, with the given response headers
   * (S3 only; null on a driver that cannot presign).
   */
  presignGet(key: string, opts: { contentType: string; disposition: string; expiresInS: number }): Promise<string | null>
  close(): void
}

/**
 * The configured driver. The S3 one is imported only when configured: the AWS SDK costs a process
 * ~34 MiB of resident memory and ~6 MiB of live heap, which a local-disk deployment never uses
 * (docs/deployment.md, "Memory").
 */
export async function createStorage(config: Config, log?: Pick<Log, 'warn'>): Promise<ObjectStorage> {
  if (config.STORAGE_DRIVER === 's3') {
    const { createS3Storage } = await import('./s3.js')
    return createS3Storage({
      endpoint: config.S3_ENDPOINT,
      region: config.S3_REGION,
      bucket: config.S3_BUCKET!,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      log,
    })
  }
  return createLocalStorage(config.STORAGE_DIR ?? join(config.PARLEY_DIR, 'uploads'))
}
