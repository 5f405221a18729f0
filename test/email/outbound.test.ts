// Outbound e-mail (API.md section 19): a public agent reply on an e-mail conversation is mailed
// over the channel's SMTP (a real smtp-server on 127.0.0.1), durably and once.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { fast, freePort, startSmtp, waitFor } from '../transcripts/smtp.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'
import { PDF, uploadForm } from '../attachments/fixtures.js'
import { delivery, mailThread, outHeader, SMTP_AUTH } from './fixtures.js'
import { replySubject, threadReferences } from '../../src/email/outbound.js'
import { contextFor } from '../../src/context.js'
import { wakeSnoozed } from '../../src/triage/status.js'

const reply = (app: Awaited<ReturnType<typeof build>>['app'], headers: Record<string, string>, id: string, payload: object) =>
  app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers, payload })

const pdf = (bytes: number) => Buffer.concat([PDF, randomBytes(bytes - PDF.length)])

t.test('a reply goes out with its headers, subject, bodies and files', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  const { app, redisPrefix } = await build(t, { env: { ...fast, API_URL: 'https://api.parley.test' } })
  const events = await listenEvents(t, redisPrefix)
  const th = await mailThread(app, smtp.port)
  const agent = th.ws.agent

  // Three files: 4 + 4 MiB attached (8 MiB), 3 MiB more would pass 10 MiB: linked.
  const MiB = 1024 * 1024
  const ids: string[] = []
  for (const [name, size] of [['a.pdf', 4 * MiB], ['b.pdf', 4 * MiB], ['c.pdf', 3 * MiB]] as const) {
    const form = uploadForm(th.conversationId, { filename: name, contentType: 'application/pdf', data: pdf(size) })
    const up = await app.inject({ method: 'POST', url: '/uploads', headers: { ...agent.headers, ...form.headers }, payload: form.payload })
    t.equal(up.statusCode, 201, up.body)
    ids.push(up.json().id)
  }
  const res = await reply(app, agent.headers, th.conversationId, { body: 'Hello Gina,\n\nIt ships <today>.\nBest', attachmentIds: ids })
  t.equal(res.statusCode, 201, res.body)
  const msg = res.json()
  t.equal(msg.delivery.status, 'queued', 'the answer says queued')
  t.equal(msg.delivery.error, null)

  await waitFor(() => smtp.mails.length === 1, 20000)
  const mail = smtp.mails[0]!
  const header = await outHeader(app, msg.id)
  t.match(header, /^[0-9a-f]{32}\.parley@shop\.example$/, 'a random Message-ID on the channel’s domain')
  t.equal(mail.messageId, `<${header}>`)
  t.same(mail.envelopeTo, ['gina@example.test'])
  t.equal(mail.from!.value[0]!.address, 'support@shop.example')
  t.equal(mail.from!.value[0]!.name, 'Agnes Agent via Shop Support')
  t.equal(mail.to && !Array.isArray(mail.to) ? mail.to.value[0]!.address : null, 'gina@example.test')
  t.equal(mail.subject, `Re: Order #123 never arrived [#${th.ref}]`, 'one Re:, the ref at the end')
  t.equal(mail.inReplyTo, `<${th.inboundHeader}>`, 'In-Reply-To the newest inbound mail')
  t.same(mail.references, ['<first@shop.example>', `<${th.inboundHeader}>`], 'References the thread')
  t.match(mail.text, /^Hello Gina,\n\nIt ships <today>\.\nBest/)
  t.match(mail.text, /c\.pdf: https:\/\/api\.parley\.test\/media\/[0-9a-f-]+\?token=\d+\.[\w-]+/, 'the file past 10 MiB as a signed link')
  t.match(mail.html, /<p>Hello Gina,<\/p>\s*<p>It ships &#60;today&#62;\.<br>Best<\/p>/, 'HTML body, escaped')
  t.same(mail.attachments.map((a) => [a.filename, a.size]), [['a.pdf', 4 * MiB], ['b.pdf', 4 * MiB]], 'files attached up to 10 MiB in all')

  await waitFor(async () => (await delivery(app, msg.id))!.status === 'sent')
  const updated = await events.waitFor((e) => e.event === 'message:updated' && e.payload.message.delivery?.status === 'sent', 5000)
  t.same(updated.rooms, [`ws:${th.ws.workspaceId}`], 'to the members only')
  t.equal(updated.payload.conversationId, th.conversationId)
  t.equal(updated.payload.message.id, msg.id)
  t.equal(updated.payload.message.attachments.length, 3)
  const list = (await app.inject({ method: 'GET', url: `/conversations/${th.conversationId}/messages`, headers: agent.headers })).json()
  const shown = list.data.find((m: { id: string }) => m.id === msg.id)
  t.match(shown.delivery, { status: 'sent', error: null })
  t.equal(list.data[0].delivery, null, 'the inbound message has no delivery')
  const conv = (await app.inject({ method: 'GET', url: `/conversations/${th.conversationId}`, headers: agent.headers })).json()
  t.equal(conv.subject, 'Re: Order #123 never arrived')

  // A second reply threads after the first: In-Reply-To is still the newest inbound mail,
  // References add Parley's own reply.
  const second = (await reply(app, agent.headers, th.conversationId, { body: 'One more thing' })).json()
  await waitFor(() => smtp.mails.length === 2, 20000)
  t.equal(smtp.mails[1]!.inReplyTo, `<${th.inboundHeader}>`)
  t.same(smtp.mails[1]!.references, ['<first@shop.example>', `<${th.inboundHeader}>`, `<${header}>`])
  t.equal(smtp.mails[1]!.messageId, `<${await outHeader(app, second.id)}>`)
})

t.test('notes, system messages, guest messages and web chat are never mailed', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  const { app } = await build(t, { env: fast })
  const th = await mailThread(app, smtp.port)
  const note = await reply(app, th.ws.agent.headers, th.conversationId, { body: 'internal only', private: true })
  t.equal(note.statusCode, 201)
  t.equal(note.json().delivery, null, 'a note has no delivery')
  // A web-chat conversation's agent reply.
  const web = await seedWorkspace(app, 'Web')
  const guest = await seedGuest(app, web)
  const c = await startConversation(app, guest)
  const webReply = await reply(app, web.agent.headers, c.id, { body: 'hello web' })
  t.equal(webReply.json().delivery, null, 'web chat has no delivery')
  // A SYSTEM message (the snooze wake-up's) on the e-mail conversation: never queued.
  const { sql } = app.deps
  await sql`UPDATE conversations SET status = 'SNOOZED', snoozed_until = now() - interval '1 second' WHERE id = ${th.conversationId}`
  t.ok(await wakeSnoozed(contextFor(app.deps, { kind: 'system' }), { id: th.conversationId, workspaceId: th.ws.workspaceId }), 'woken')
  const [sys] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${th.conversationId} AND sender_type = 'SYSTEM'`
  t.equal(sys!.n, 1, 'a SYSTEM message was written')
  await app.inject({ method: 'PATCH', url: `/conversations/${th.conversationId}/close`, headers: th.ws.agent.headers })
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM message_emails WHERE direction = 'out'`
  t.equal(n, 0, 'no outbound row')
  const [{ jobs }] = await sql<{ jobs: number }[]>`SELECT count(*)::int AS jobs FROM pgboss.job WHERE name = 'email-outbound'`
  t.equal(jobs, 0, 'no job')
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(smtp.mails.length, 0, 'nothing sent')
  // Then a public reply is sent: the worker was running all along.
  const pub = await reply(app, th.ws.agent.headers, th.conversationId, { body: 'public answer' })
  await waitFor(() => smtp.mails.length === 1, 20000)
  t.equal(smtp.mails[0]!.text?.trim(), 'public answer')
  t.notOk(smtp.mails[0]!.text?.includes('internal only'))
  await waitFor(async () => (await delivery(app, pub.json().id))!.status === 'sent')
})

t.test('SMTP down, then up: queued with the error, then sent once', async (t) => {
  const port = await freePort()
  const { app, redisPrefix } = await build(t, { env: fast })
  const events = await listenEvents(t, redisPrefix)
  const th = await mailThread(app, port)
  const msg = (await reply(app, th.ws.agent.headers, th.conversationId, { body: 'are you there?', clientMessageId: 'c-1' })).json()
  const failedOnce = await events.waitFor((e) => e.event === 'message:updated' && e.payload.message.delivery?.error, 15000)
  t.equal(failedOnce.payload.message.delivery.status, 'queued', 'still queued while retrying')
  t.match(failedOnce.payload.message.delivery.error, /ECONNREFUSED/)
  t.match(await delivery(app, msg.id), { status: 'queued', error: /ECONNREFUSED/ })
  // The retried HTTP send returns the same message, and queues nothing more.
  const again = await reply(app, th.ws.agent.headers, th.conversationId, { body: 'are you there?', clientMessageId: 'c-1' })
  t.equal(again.statusCode, 200)
  t.equal(again.json().delivery.status, 'queued')

  const smtp = await startSmtp(port, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  await waitFor(() => smtp.mails.length === 1, 20000)
  await waitFor(async () => (await delivery(app, msg.id))!.status === 'sent')
  t.match(await delivery(app, msg.id), { status: 'sent', error: null })
  await events.waitFor((e) => e.event === 'message:updated' && e.payload.message.delivery?.status === 'sent', 5000)
  await new Promise((r) => setTimeout(r, 1500))
  t.equal(smtp.mails.length, 1, 'sent once')
})

t.test('failed once the retries are spent', async (t) => {
  const port = await freePort()
  const { app, redisPrefix } = await build(t, { env: { ...fast, TRANSCRIPT_RETRY_LIMIT: '1' } })
  const events = await listenEvents(t, redisPrefix)
  const th = await mailThread(app, port)
  const msg = (await reply(app, th.ws.agent.headers, th.conversationId, { body: 'nobody listens' })).json()
  const failed = await events.waitFor((e) => e.event === 'message:updated' && e.payload.message.delivery?.status === 'failed', 20000)
  t.match(failed.payload.message.delivery, { status: 'failed', error: /ECONNREFUSED/ })
  t.match(await delivery(app, msg.id), { status: 'failed', error: /ECONNREFUSED/ })
  // Coming up later sends nothing: the message stays failed.
  const smtp = await startSmtp(port, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  await new Promise((r) => setTimeout(r, 2000))
  t.equal(smtp.mails.length, 0)
  t.match(await delivery(app, msg.id), { status: 'failed' })

  // A guest without an address: failed at once, no retry.
  await app.deps.sql`UPDATE guests SET email = NULL WHERE id = ${th.guestId}`
  const lost = (await reply(app, th.ws.agent.headers, th.conversationId, { body: 'to whom?' })).json()
  await waitFor(async () => (await delivery(app, lost.id))!.status === 'failed', 10000)
  t.match(await delivery(app, lost.id), { error: /no e-mail address/ })
})

t.test('a recipient the SMTP server refuses (550): failed at once, no retry', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH, rejectRcpt: ['gina@example.test'] })
  t.teardown(smtp.close)
  const { app } = await build(t, { env: fast })
  const th = await mailThread(app, smtp.port)
  const msg = (await reply(app, th.ws.agent.headers, th.conversationId, { body: 'hello?' })).json()
  await waitFor(async () => (await delivery(app, msg.id))!.status === 'failed', 10000)
  t.match(await delivery(app, msg.id), { error: /550.*No such user/ })
  const [job] = await app.deps.jobs.boss.findJobs('email-outbound', { key: msg.id })
  t.equal(job?.retryCount, 0, 'one attempt only')
})

t.test('two replicas sending the queue: each mail sent once', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  const a = await build(t, { env: fast })
  const b = await build(t, { env: fast, databaseUrl: a.databaseUrl })
  const th = await mailThread(a.app, smtp.port)
  const N = 12
  const sent = await Promise.all(
    Array.from({ length: N }, (_, i) => reply(i % 2 ? a.app : b.app, th.ws.agent.headers, th.conversationId, { body: `reply ${i}` })),
  )
  t.ok(sent.every((r) => r.statusCode === 201))
  await waitFor(() => smtp.mails.length >= N, 30000)
  await waitFor(async () => {
    const [{ n }] = await a.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM messages WHERE delivery_status = 'sent'`
    return n === N
  })
  await new Promise((r) => setTimeout(r, 1500))
  const ids = smtp.mails.map((m) => m.messageId)
  t.equal(ids.length, N, 'N mails')
  t.equal(new Set(ids).size, N, 'each Message-ID once')
  t.same(smtp.mails.map((m) => m.text?.trim()).sort(), Array.from({ length: N }, (_, i) => `reply ${i}`).sort())
})

t.test('a restart between the reply and its sending loses nothing and sends once', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  // App A takes the reply but runs no worker, then stops.
  const a = await build(t, { env: { ...fast, JOBS_WORKER: 'false' } })
  const th = await mailThread(a.app, smtp.port)
  const msg = (await reply(a.app, th.ws.agent.headers, th.conversationId, { body: 'before the restart' })).json()
  t.equal(msg.delivery.status, 'queued')
  await a.app.close()
  t.equal(smtp.mails.length, 0)
  // App B on the same database sends it.
  const b = await build(t, { env: fast, databaseUrl: a.databaseUrl })
  await waitFor(() => smtp.mails.length === 1, 20000)
  t.equal(smtp.mails[0]!.messageId, `<${await outHeader(b.app, msg.id)}>`)
  await waitFor(async () => (await delivery(b.app, msg.id))!.status === 'sent')
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(smtp.mails.length, 1, 'exactly once')
})

t.test('subject and References rules', async (t) => {
  t.equal(replySubject('Re: RE: Fwd: Hello [#abcdefghjk]', 'k7p2x9qdm3'), 'Re: Hello [#k7p2x9qdm3]')
  t.equal(replySubject(null, 'k7p2x9qdm3'), 'Re: (no subject) [#k7p2x9qdm3]')
  t.equal(replySubject('  Where\n is   it ', 'k7p2x9qdm3'), 'Re: Where is it [#k7p2x9qdm3]')
  const many = Array.from({ length: 30 }, (_, i) => `m${i}@x`)
  const refs = threadReferences(['m0@x'], many)
  t.equal(refs.length, 20)
  t.equal(refs[0], 'm0@x', 'the thread’s first kept')
  t.equal(refs[19], 'm29@x', 'and its newest')
  t.same(threadReferences(['a@x', 'b@x'], ['b@x', 'c@x']), ['a@x', 'b@x', 'c@x'], 'each once, in order')
})
