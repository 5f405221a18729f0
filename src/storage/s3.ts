import { AbortMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { PassThrough, pipeline, type Readable } from 'node:stream'
import type { Log } from '../logger.js'
import type { ObjectStorage } from './storage.js'

export interface S3Options {
  endpoint?: string
  region: string
  bucket: string
  accessKeyId?: string
  secretAccessKey?: string
  forcePathStyle: boolean
  /** Where a failed clean-up (an abort the store refused) is reported. */
  log?: Pick<Log, 'warn'>
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
      // lib-storage takes a Body's total length from its `byteLength`, `length`, `size` or `path`
      // when it has one, and refuses to complete a multipart upload whose part count disagrees
      // (it aborts instead). A stream may carry such a field for another meaning (the upload
      // inspector's running `size` was 0 when the Upload was made: 3 parts of 12 MiB were
      // "expected 0", aborted, and the store's answer to the abort surfaced as a 503). A bare
      // PassThrough has none, so the length is unknown and the parts decide; an error of `body`
      // still reaches the upload through pipeline.
      const Body = new PassThrough({ highWaterMark: 256 * 1024 })
      pipeline(body, Body, () => {})
      const upload = new Upload({
        client,
        params: { Bucket, Key: key, Body, ContentType: contentType },
        queueSize: 1,
        partSize: 5 * 1024 * 1024,
        // The abort is ours (below): lib-storage's own would replace the upload's error with the
        // abort's when the store refuses it.
        leavePartsOnError: true,
      })
      try {
        await upload.done()
      } catch (err) {
        body.destroy()
        if (upload.uploadId) {
          // Parts already stored cost space until the multipart upload is aborted.
          await client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: upload.uploadId })).catch((abortErr: Error) =>
            opts.log?.warn({ key, uploadId: upload.uploadId, err: { name: abortErr.name, message: abortErr.message } }, 'S3 multipart upload not aborted: its parts stay until a lifecycle rule removes them'),
          )
        }
        // A single-part upload may have completed before the error surfaced elsewhere; make sure.
        await client.send(new DeleteObjectCommand({ Bucket, Key: key })).catch(() => {})
        throw err
      }
    },
    // `size` changes nothing here: the store answers in its own pieces.
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
