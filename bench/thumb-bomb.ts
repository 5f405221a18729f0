/**
 * Issue 32, the thumbnail bomb: the API's peak RSS while four `GET /media/:id?variant=thumb` of a
 * 10,000 x 10,000 progressive JPEG (and four of a truncated copy) run at once. This process is the
 * API (build() from test/helper.ts, listening on a real socket on 127.0.0.1); the images are made
 * first in a child process so their pixels never count toward this one's peak.
 * `under` and `under-truncated`: four different uploads of a 6,300 x 6,300 (39.7 MP) JPEG, one
 * request each at once: images under the limit, which are decoded.
 *
 *   node --import tsx test/setup/prepare.ts && node --import tsx bench/thumb-bomb.ts [whole|truncated|under|under-truncated]
 *
 * One scenario per process (freed memory is not always returned to the system, so a second
 * scenario in the same process would start from the first one's high-water mark).
 *
 * Peak = VmHWM from /proc/self/status, reset (clear_refs 5) right before the requests.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build, seedGuest, seedWorkspace } from '../test/helper.js'
import { startConversation } from '../test/conversations/fixtures.js'
import { uploadForm } from '../test/attachments/fixtures.js'

const SIDE = process.argv[2]?.startsWith('under') ? 6300 : 10_000
const FILE = join(tmpdir(), `parley-thumb-bomb-${SIDE}.jpg`)

if (process.argv[3] === '--make') {
  // A smooth 10,000 x 10,000 picture (small noise blown up): a progressive JPEG of about a megabyte.
  const { default: sharp } = await import('sharp')
  const seed = Buffer.alloc(50 * 50 * 3)
  for (let i = 0; i < seed.length; i++) seed[i] = (i * 7919) % 251
  const big = await sharp(seed, { raw: { width: 50, height: 50, channels: 3 } })
    .resize(SIDE, SIDE, { kernel: 'cubic' })
    .jpeg({ progressive: true, quality: 60 })
    .toBuffer()
  writeFileSync(FILE, big)
  process.exit(0)
}

if (!existsSync(FILE)) execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, process.argv[2] ?? 'whole', '--make'], { stdio: 'inherit' })
const image = readFileSync(FILE)
const truncated = image.subarray(0, Math.floor(image.length / 2))

const mib = (kb: string) => Math.round(Number(kb) / 1024)
const status = () => readFileSync('/proc/self/status', 'utf8')
const field = (name: string) => mib(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status())![1]!)

const teardowns: (() => unknown)[] = []
const { app } = await build({ teardown: (fn) => teardowns.push(fn) }, { env: { JOBS_WORKER: 'false', STORAGE_DIR: join(tmpdir(), 'parley-thumb-bomb-files') } })
const base = await app.listen({ host: '127.0.0.1', port: 0 })
const ws = await seedWorkspace(app)
const guest = await seedGuest(app, ws)
const conv = await startConversation(app, guest)

async function upload(name: string, data: Buffer): Promise<string> {
  const form = uploadForm(conv.id, { filename: name, contentType: 'image/jpeg', data })
  const res = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...ws.agent.headers, ...form.headers }, body: new Uint8Array(form.payload) })
  if (res.status !== 201) throw new Error(`upload ${name}: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { url: string }).url
}

async function four(label: string, urls: string[]) {
  global.gc?.()
  const before = field('VmRSS')
  writeFileSync('/proc/self/clear_refs', '5') // VmHWM := VmRSS
  const started = Date.now()
  const answers = await Promise.all(
    urls.map(async (url) => {
      const t0 = Date.now()
      const res = await fetch(`${base}${url}?variant=thumb`, { headers: ws.agent.headers })
      await res.arrayBuffer()
      return `${res.status} in ${Date.now() - t0} ms`
    }),
  )
  console.log(`${label}: RSS before ${before} MiB, peak ${field('VmHWM')} MiB, ${Date.now() - started} ms in all; answers: ${answers.join(', ')}`)
}

const which = process.argv[2] ?? 'whole'
const cut = which.endsWith('truncated')
console.log(`image ${image.length} bytes (${SIDE} x ${SIDE} progressive JPEG), truncated copy ${truncated.length} bytes`)
if (which.startsWith('under')) {
  const urls = await Promise.all([0, 1, 2, 3].map((i) => upload(`under-${i}.jpg`, cut ? truncated : image)))
  await four(`four parallel thumbnails of four different ${cut ? 'truncated ' : ''}${SIDE} x ${SIDE} JPEGs`, urls)
  await four('the same four again', urls)
} else {
  const url = await upload(`bomb-${which}.jpg`, cut ? truncated : image)
  await four(`four parallel thumbnails of the ${cut ? 'truncated copy' : '10,000 x 10,000 JPEG'}`, [url, url, url, url])
  await four('the same four again', [url, url, url, url])
}
for (const fn of teardowns.reverse()) await fn()
process.exit(0)
