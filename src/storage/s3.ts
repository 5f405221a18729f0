import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import type { Readable } from 'node:stream'
import type { ObjectStorage } from './storage.js'

export interface S3Options {
  endpoint?: string
  region: string
  bucket: string
  accessKeyId?: string
  secretAccessKey?: string
  forcePathStyle: boolean
}

const missing = (err: unknown) =>
  err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404)

/**
 * Any S3-compatible store through the AWS SDK. Writes go through lib-storage's Upload (multipart
 * above one 5 MiB part, one part in flight per upload so memory stays flat). Checksums only when
 * an operation requires them: recent SDKs add CRC32 trailers by default, which several
 * S3-compatible servers reject. Short connection timeouts and one retry: a store that is down
 * answers 503 in about a second rather than holding the request.
 */
export function createS3Storage(opts: S3Options): ObjectStorage {
  const client = new S3Client({
    endpoint: opts.endpoint,
    region: opts.region,
    forcePathStyle: opts.forcePathStyle,
    credentials: opts.accessKeyId && opts.secretAccessKey ? { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } : undefined,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 1000, requestTimeout: 60_000 },
  })
  const Bucket = opts.bucket
  return {
    driver: 's3',
    async put(key, body, contentType) {
      const upload = new Upload({
        client,
        params: { Bucket, Key: key, Body: body, ContentType: contentType },
        queueSize: 1,
        partSize: 5 * 1024 * 1024,
        leavePartsOnError: false,
      })
      try {
        await upload.done()
      } catch (err) {
        // A single-part upload may have completed before the error surfaced elsewhere; make sure.
        await client.send(new DeleteObjectCommand({ Bucket, Key: key })).catch(() => {})
        throw err
      }
    },
    async get(key, range) {
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }))
        return res.Body as Readable
      } catch (err) {
        if (missing(err)) return null
        throw err
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }))
    },
    async exists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket, Key: key }))
        return true
      } catch (err) {
        if (missing(err)) return false
        throw err
      }
    },
    presignGet: (key, o) =>
      getSignedUrl(
        client,
        new GetObjectCommand({ Bucket, Key: key, ResponseContentType: o.contentType, ResponseContentDisposition: o.disposition }),
        { expiresIn: o.expiresInS },
      ),
    close: () => client.destroy(),
  }
}
