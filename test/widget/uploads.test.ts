// Files from the widget in a real browser: picked, dropped and pasted, uploaded with progress
// (POST /uploads), then sent as attachments of a message and shown in the thread.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateSync, crc32 } from 'node:zlib'
import t from 'tap'
import { seedWorkspace } from '../helper.js'
import { connect } from '../gateway/fixtures.js'
import { hostSite, launchBrowser, newPage, snippet, startStack } from './browser.js'

/** A real w x h RGB PNG (what a screenshot is), so type detection sees image bytes. */
function png(w: number, h: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])) >>> 0)
    return Buffer.concat([len, Buffer.from(type), data, crc])
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(w, 0)
  header.writeUInt32BE(h, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const rows = Buffer.concat(Array.from({ length: h }, () => Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3, 0x5a)])))
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))])
}

const storage = await mkdtemp(join(tmpdir(), 'parley-widget-uploads-'))
t.teardown(() => rm(storage, { recursive: true, force: true }))
const stack = await startStack(t, { STORAGE_DIR: storage })
const { app } = stack
const { sql } = app.deps
const browser = await launchBrowser(t)

t.test('picked, dropped and pasted files arrive as attachments of the next message, shown in the thread', async (t) => {
  const shop = await seedWorkspace(app, 'Files shop')
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const site = await hostSite(t, { '/': `<!doctype html><title>Files</title><body>${snippet(stack, shop, { name: 'Fay', email: 'fay@example.test' })}</body>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/')
  await page.locator('.launcher').click()

  // The picker (the paperclip opens this input).
  await page.locator('input[type=file]').setInputFiles({ name: 'receipt.png', mimeType: 'image/png', buffer: png(64, 48) })
  await page.locator('.upload.done', { hasText: 'receipt.png' }).waitFor({ timeout: 15_000 })
  // Drag and drop onto the panel.
  await page.locator('.panel').evaluate((panel) => {
    const dt = new DataTransfer()
    dt.items.add(new File(['sku,qty\nEMB-1,2\n'], 'order.csv', { type: 'text/csv' }))
    panel.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }))
  })
  await page.locator('.upload.done', { hasText: 'order.csv' }).waitFor({ timeout: 15_000 })
  // Paste into the message box.
  await page.getByLabel('Type your message').evaluate((box) => {
    const dt = new DataTransfer()
    dt.items.add(new File(['the tracking number is 123'], 'note.txt', { type: 'text/plain' }))
    box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }))
  })
  await page.locator('.upload.done', { hasText: 'note.txt' }).waitFor({ timeout: 15_000 })

  await page.getByLabel('Type your message').fill('Here are my files')
  await page.keyboard.press('Enter')
  const bubble = page.locator('li.GUEST[data-id]', { hasText: 'Here are my files' })
  await bubble.waitFor({ timeout: 10_000 })
  for (const name of ['receipt.png', 'order.csv', 'note.txt']) await bubble.locator('.file', { hasText: name }).waitFor()
  // The image is fetched with the visitor's header and shown (a thumbnail through an object URL).
  await page.waitForFunction(() => {
    const img = document.querySelector('parley-widget')?.shadowRoot?.querySelector('li.GUEST img') as HTMLImageElement | null
    return img !== null && img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0
  })

  const rows = await sql<{ body: string; filename: string; contentType: string }[]>`
    SELECT m.body, a.filename, a.content_type AS "contentType"
    FROM attachments a JOIN messages m ON m.id = a.message_id JOIN conversations c ON c.id = m.conversation_id
    WHERE c.channel_id = ${shop.channelId} ORDER BY a.filename`
  t.same(rows, [
    { body: 'Here are my files', filename: 'note.txt', contentType: 'text/plain' },
    { body: 'Here are my files', filename: 'order.csv', contentType: 'text/csv' },
    { body: 'Here are my files', filename: 'receipt.png', contentType: 'image/png' },
  ], 'one message carries the three files')
  t.equal(await page.locator('.upload').count(), 0, 'the tray is empty once sent')
})

t.test('a file alone is a message with an empty body; a refused type says so and sends nothing', async (t) => {
  const shop = await seedWorkspace(app, 'Solo shop')
  await connect(t, stack.gateway.url, { token: shop.agent.token, workspaceId: shop.workspaceId })
  const site = await hostSite(t, { '/': `<!doctype html><title>Solo</title><body>${snippet(stack, shop, { email: 'sol@example.test' })}</body>` })
  const page = await newPage(t, browser)
  await page.goto(site + '/')
  await page.locator('.launcher').click()
  await page.locator('input[type=file]').setInputFiles({ name: 'tool.exe', mimeType: 'image/png', buffer: Buffer.from('MZ\x90\x00 not really an image') })
  await page.locator('.upload.error', { hasText: 'type not allowed' }).waitFor({ timeout: 15_000 })
  await page.locator('input[type=file]').setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: png(20, 20) })
  await page.locator('.upload.done', { hasText: 'photo.png' }).waitFor({ timeout: 15_000 })
  await page.getByLabel('Type your message').press('Enter')
  await page.locator('li.GUEST[data-id] .file', { hasText: 'photo.png' }).waitFor({ timeout: 10_000 })
  const rows = await sql<{ body: string; filename: string }[]>`
    SELECT m.body, a.filename FROM attachments a JOIN messages m ON m.id = a.message_id JOIN conversations c ON c.id = m.conversation_id
    WHERE c.channel_id = ${shop.channelId}`
  t.same(rows, [{ body: '', filename: 'photo.png' }])
})
