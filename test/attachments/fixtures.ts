import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import S3rver from 's3rver'
import sharp from 'sharp'
import type { TestContext } from '../helper.js'

// The SDK warns once per process that Node 20 support ends; the test output stays readable.
process.env.AWS_SDK_JS_SUPPRESS_NODE_DEPRECATION_WARNING = '1'

export type Driver = 'local' | 's3'
export const DRIVERS: Driver[] = ['local', 's3']

export interface S3Server {
  port: number
  endpoint: string
  bucket: string
  /** Stops the server (the store goes down); `start` brings it back on the same port and data. */
  stop(): Promise<void>
  start(): Promise<void>
  client(): S3Client
  /** Every request the server answered, in order (method, path with query, status): what the driver asked of the store. */
  requests: { method: string; url: string; status: number }[]
}

/** A real S3-compatible server (s3rver) on 127.0.0.1 with one bucket, removed at teardown. */
export async function startS3(t: TestContext): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-s3-'))
  const bucket = `parley-${randomBytes(4).toString('hex')}`
  let server: S3rver | null = null
  let port = 0
  const requests: S3Server['requests'] = []
  const start = async () => {
    server = new S3rver({ port, address: '127.0.0.1', silent: true, directory: dir })
    // First in the chain (Koa composes it when the server starts listening): records, changes nothing.
    // s3rver is a Koa application; its type declarations leave that out.
    const koa = server as unknown as { middleware: ((ctx: { method: string; url: string; status: number }, next: () => Promise<void>) => Promise<void>)[] }
    koa.middleware.unshift(async (ctx, next) => {
      try {
        await next()
        requests.push({ method: ctx.method, url: ctx.url, status: ctx.status })
      } catch (err) {
        // s3rver's errors (S3Error) carry their status; Koa renders them after the chain.
        requests.push({ method: ctx.method, url: ctx.url, status: (err as { status?: number }).status ?? 500 })
        throw err
      }
    })
    const addr = await server.run()
    port = addr.port
  }
  await start()
  const client = () =>
    new S3Client({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    })
  const c = client()
  await c.send(new CreateBucketCommand({ Bucket: bucket }))
  c.destroy()
  const s3: S3Server = {
    get port() {
      return port
    },
    get endpoint() {
      return `http://127.0.0.1:${port}`
    },
    bucket,
    async stop() {
      if (server) await server.close()
      server = null
    },
    start,
    client,
    requests,
  }
  t.teardown(async () => {
    await s3.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  return s3
}

/** The environment of an app on `driver`: a fresh directory, or a fresh bucket on a real S3 server. */
export async function storageEnv(t: TestContext, driver: Driver, extra: Record<string, string> = {}) {
  if (driver === 'local') {
    const dir = mkdtempSync(join(tmpdir(), 'parley-files-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    return { env: { STORAGE_DRIVER: 'local', STORAGE_DIR: dir, ...extra }, dir, s3: null }
  }
  const s3 = await startS3(t)
  return {
    env: {
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: 'us-east-1',
      S3_BUCKET: s3.bucket,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
      ...extra,
    },
    dir: null,
    s3,
  }
}

export interface FilePart {
  filename?: string
  contentType?: string
  data: Buffer
}

/** A multipart/form-data body: fields in the order given, `file` parts where they appear. */
export function multipart(parts: [string, string | FilePart][]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----parley${randomBytes(8).toString('hex')}`
  const chunks: Buffer[] = []
  for (const [name, value] of parts) {
    if (typeof value === 'string') {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`))
    } else {
      const fn = value.filename === undefined ? '' : `; filename="${value.filename}"`
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"${fn}\r\nContent-Type: ${value.contentType ?? 'application/octet-stream'}\r\n\r\n`))
      chunks.push(value.data, Buffer.from('\r\n'))
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

/** The usual upload form: conversationId then the file. */
export const uploadForm = (conversationId: string, file: FilePart) => multipart([['conversationId', conversationId], ['file', file]])

/** A real PNG of w x h pixels: a flat colour, or noise (which does not compress) with `noise`. */
export async function png(w: number, h: number, opts: { noise?: boolean } = {}): Promise<Buffer> {
  if (!opts.noise) return sharp({ create: { width: w, height: h, channels: 3, background: { r: 200, g: 90, b: 40 } } }).png().toBuffer()
  const raw = randomBytes(w * h * 3)
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer()
}

export async function jpeg(w: number, h: number): Promise<Buffer> {
  const raw = randomBytes(w * h * 3)
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } }).jpeg().toBuffer()
}

/** A minimal valid PDF. */
export const PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n')
