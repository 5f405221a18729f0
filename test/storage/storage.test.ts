import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { text } from 'node:stream/consumers'
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config.js'
import { createStorage } from '../../src/storage/storage.js'
import { DRIVERS, storageEnv, type Driver } from '../attachments/fixtures.js'
import { testEnv } from '../helper.js'

/**
 * One suite, both drivers (API.md section 10: "Both drivers pass the same tests"): local disk and
 * S3 against a real S3-compatible server on 127.0.0.1.
 */
async function storageFor(t: Test, driver: Driver) {
  const { env, s3 } = await storageEnv(t, driver)
  const storage = createStorage(loadConfig(testEnv(env)))
  t.teardown(() => storage.close())
  return { storage, s3 }
}

const bytesOf = async (s: Readable | null) => {
  if (!s) return null
  const chunks: Buffer[] = []
  for await (const c of s) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

/** A stream that sends `n` bytes then fails, as a client that goes away mid-upload. */
function failingAfter(n: number): Readable {
  let sent = 0
  return new Readable({
    read() {
      if (sent >= n) return this.destroy(new Error('client went away'))
      const chunk = randomBytes(Math.min(64 * 1024, n - sent))
      sent += chunk.length
      this.push(chunk)
    },
  })
}

for (const driver of DRIVERS) {
  t.test(`storage driver: ${driver}`, async (t) => {
    const { storage, s3 } = await storageFor(t, driver)
    const ws = randomBytes(4).toString('hex')

    t.test('put, get, exists, delete', async (t) => {
      const data = randomBytes(300_000)
      const key = `${ws}/a`
      t.equal(await storage.exists(key), false)
      await storage.put(key, Readable.from([data]), 'application/octet-stream')
      t.equal(await storage.exists(key), true)
      t.same(createHash('sha256').update((await bytesOf(await storage.get(key)))!).digest('hex'), createHash('sha256').update(data).digest('hex'))
      await storage.delete(key)
      t.equal(await storage.exists(key), false)
      t.equal(await storage.get(key), null, 'a missing object is null')
      await storage.delete(key) // idempotent
    })

    t.test('ranges are inclusive at both ends', async (t) => {
      const key = `${ws}/r`
      await storage.put(key, Readable.from([Buffer.from('0123456789')]), 'text/plain')
      t.equal(await text((await storage.get(key, { start: 2, end: 5 }))!), '2345')
      t.equal(await text((await storage.get(key, { start: 9, end: 9 }))!), '9')
    })

    t.test('a large streamed write (multipart on S3) arrives whole', async (t) => {
      const key = `${ws}/big`
      const parts = Array.from({ length: 12 }, () => randomBytes(1024 * 1024))
      await storage.put(key, Readable.from(parts), 'application/octet-stream')
      const got = await bytesOf(await storage.get(key))
      t.equal(got!.length, 12 * 1024 * 1024)
      t.ok(got!.equals(Buffer.concat(parts)))
    })

    t.test('a body that fails mid-way leaves no object', async (t) => {
      for (const n of [1000, 7 * 1024 * 1024]) {
        const key = `${ws}/fail-${n}`
        await t.rejects(storage.put(key, failingAfter(n), 'application/octet-stream'))
        t.equal(await storage.exists(key), false, `nothing kept after ${n} bytes`)
      }
    })

    t.test('presigned links', async (t) => {
      const key = `${ws}/p`
      await storage.put(key, Readable.from([Buffer.from('hello')]), 'text/plain')
      const url = await storage.presignGet(key, { contentType: 'text/plain', disposition: 'attachment; filename="x.txt"', expiresInS: 60 })
      if (driver === 'local') return t.equal(url, null, 'local disk cannot presign')
      const res = await fetch(url!)
      t.equal(res.status, 200)
      t.equal(await res.text(), 'hello')
      t.equal(res.headers.get('content-disposition'), 'attachment; filename="x.txt"')
    })

    if (s3) {
      t.test('a store that is down rejects, then works again without a new client', async (t) => {
        await s3.stop()
        await t.rejects(storage.put(`${ws}/down`, Readable.from([Buffer.from('x')]), 'text/plain'))
        await t.rejects(storage.get(`${ws}/a`))
        await s3.start()
        await storage.put(`${ws}/up`, Readable.from([Buffer.from('x')]), 'text/plain')
        t.equal(await storage.exists(`${ws}/up`), true)
      })
    }
  })
}
