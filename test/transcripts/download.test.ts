import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { seedConversation, seedManyMessages, seedMessages } from '../search/seed.js'

t.test('download: txt (default), json and html, with access rules', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws, 'Gina <b>Guest</b>', 'gina@example.test')
  const conv = await seedConversation(app, ws, guest)
  await seedMessages(app, conv, [
    { body: 'Hello, I need help' },
    { body: 'Sure! What is wrong?', senderType: 'AGENT', senderName: 'Agnes Agent' },
    { body: '<script>alert("x")</script> & "quotes"\nsecond line' },
    { body: 'Conversation assigned', senderType: 'SYSTEM' },
  ])

  await t.test('txt: one line per message, continuation lines indented, never cached', async (t) => {
    const txt = await app.inject({ method: 'GET', url: `/conversations/${conv}/download`, headers: ws.agent.headers })
    t.equal(txt.statusCode, 200)
    t.equal(txt.headers['content-disposition'], `attachment; filename="transcript-${conv}.txt"`)
    t.match(txt.headers['content-type'], /^text\/plain; charset=utf-8/)
    t.equal(txt.headers['cache-control'], 'private, no-store', 'a transcript is never stored by a cache')
    const lines = txt.body.split('\n')
    const msgLines = lines.filter((l) => l.startsWith('['))
    t.equal(msgLines.length, 4)
    t.match(msgLines[0], /^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] Gina Guest \(guest\): Hello, I need help$/)
    t.match(msgLines[1], /Agnes Agent \(agent\): Sure! What is wrong\?$/)
    t.ok(txt.body.includes('<script>alert("x")</script> & "quotes"\n    second line'), 'continuation lines indented')
  })

  await t.test('json: the conversation and its messages, names as the API gives them', async (t) => {
    const json = await app.inject({ method: 'GET', url: `/conversations/${conv}/download?format=json`, headers: ws.owner.headers })
    t.equal(json.statusCode, 200)
    t.equal(json.headers['content-disposition'], `attachment; filename="transcript-${conv}.json"`)
    const doc = json.json()
    t.equal(doc.conversation.id, conv)
    t.equal(doc.conversation.guest.name, 'Gina <b>Guest</b>')
    t.same(
      doc.messages.map((m: { senderType: string; senderName: string }) => [m.senderType, m.senderName]),
      [
        ['GUEST', 'Gina Guest'],
        ['AGENT', 'Agnes Agent'],
        ['GUEST', 'Gina Guest'],
        ['SYSTEM', 'System'],
      ],
    )
    t.match(doc.messages[0].createdAt, /Z$/)
  })

  await t.test("html: the conversation's visitor may download it, everything escaped", async (t) => {
    const html = await app.inject({ method: 'GET', url: `/conversations/${conv}/download?format=html`, headers: guest.headers })
    t.equal(html.statusCode, 200, 'the visitor of the conversation may download it')
    t.equal(html.headers['content-disposition'], `attachment; filename="transcript-${conv}.html"`)
    t.match(html.headers['content-type'], /^text\/html/)
    t.notOk(html.body.includes('<script>'), 'no raw script tag')
    t.notOk(html.body.includes('<b>Guest</b>'), 'guest name escaped')
    t.ok(html.body.includes('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#34;quotes&#34;'))
    t.ok(html.body.includes('Agnes Agent'))
  })

  await t.test('refusals: unknown format 400; other guest, other workspace, malformed id, deleted 404; anonymous 401', async (t) => {
    const bad = await app.inject({ method: 'GET', url: `/conversations/${conv}/download?format=pdf`, headers: ws.agent.headers })
    t.equal(bad.statusCode, 400)
    t.equal(bad.json().code, 'VALIDATION_ERROR')

    const other = await seedGuest(app, ws, 'Other')
    const foreign = await app.inject({ method: 'GET', url: `/conversations/${conv}/download`, headers: other.headers })
    t.equal(foreign.statusCode, 404, "another guest's visitor gets 404")
    t.equal(foreign.json().code, 'CONVERSATION_NOT_FOUND')

    const ws2 = await seedWorkspace(app, 'Other Co')
    const tenant = await app.inject({ method: 'GET', url: `/conversations/${conv}/download`, headers: ws2.owner.headers })
    t.equal(tenant.statusCode, 404, 'another workspace gets 404')

    const malformed = await app.inject({ method: 'GET', url: `/conversations/not-a-uuid/download`, headers: ws.agent.headers })
    t.equal(malformed.statusCode, 404)

    const anon = await app.inject({ method: 'GET', url: `/conversations/${conv}/download` })
    t.equal(anon.statusCode, 401)

    const deleted = await seedConversation(app, ws, guest, { deleted: true })
    const del = await app.inject({ method: 'GET', url: `/conversations/${deleted}/download`, headers: ws.agent.headers })
    t.equal(del.statusCode, 404, 'a deleted conversation is 404')
  })
})

t.test('download: 50,000 messages stream in order, in batches', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await seedConversation(app, ws, guest)
  await seedManyMessages(app, conv, 50_000)

  const res = await app.inject({ method: 'GET', url: `/conversations/${conv}/download`, headers: ws.agent.headers })
  t.equal(res.statusCode, 200)
  const lines = res.body.split('\n').filter((l) => l.startsWith('['))
  t.equal(lines.length, 50_000)
  let ordered = true
  for (let i = 0; i < lines.length; i++) if (!lines[i]!.endsWith(`: message ${i + 1}`)) ordered = false
  t.ok(ordered, 'all messages, in order')

  const json = await app.inject({ method: 'GET', url: `/conversations/${conv}/download?format=json`, headers: ws.agent.headers })
  const doc = json.json()
  t.equal(doc.messages.length, 50_000)
  t.equal(doc.messages[49_999].body, 'message 50000')
})

t.test('the renderer yields bounded chunks (one per batch), never the whole transcript', async (t) => {
  const { renderTranscript, TRANSCRIPT_BATCH } = await import('../../src/transcripts/render.js')
  const { findConversationView } = await import('../../src/conversations/view.js')
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await seedConversation(app, ws, guest)
  await seedManyMessages(app, conv, 5_500)
  const view = await findConversationView(app.deps.sql, conv)
  for (const format of ['txt', 'json', 'html'] as const) {
    let chunks = 0
    let largest = 0
    for await (const chunk of renderTranscript(app.deps.sql, view!, format, 'members')) {
      chunks++
      largest = Math.max(largest, chunk.length)
    }
    t.ok(chunks >= Math.ceil(5_500 / TRANSCRIPT_BATCH), `${format}: ${chunks} chunks`)
    t.ok(largest < TRANSCRIPT_BATCH * 300, `${format}: largest chunk ${largest} chars`)
  }
})
