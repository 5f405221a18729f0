// Inbound e-mail (API.md section 19) against a real Dovecot: a new mail becomes a conversation,
// threading by headers and by [#ref], reopen, duplicates, auto-replies, quoted history,
// original.eml for members only, files, the per-sender limit.
import t from 'tap'
import { rawMail } from '../support/dovecot.js'
import { waitFor } from '../support/processes.js'
import { conversationsOf, emailSetup, inboundOf, messagesOf } from './fixtures.js'

t.test('inbound mail', async (t) => {
  const { app, ws, dv, channelId } = await emailSetup(t, { VISITOR_CONVERSATIONS_PER_HOUR: '3' })
  const { sql } = app.deps
  const h = ws.admin.headers
  const inbound = () => inboundOf(app, channelId)
  const until = (n: number, ms = 10_000) => waitFor(async () => (await inbound()).length >= n, ms, 100)

  let first: { conversationId: string; guestId: string }
  await t.test('a new mail becomes a conversation and a message within 10 s', async (t) => {
    const started = Date.now()
    await dv.append(
      rawMail(
        { From: '"Jane Doe" <Jane.Doe@Customer.Example>', To: 'support@example.test', Subject: 'Cannot log in', 'Message-ID': '<first@customer.example>' },
        'Hello,\n\nmy login fails since this morning.\n\nJane',
      ),
    )
    await until(1)
    t.ok(Date.now() - started < 10_000, `imported after ${Date.now() - started} ms`)
    const [m] = await inbound()
    t.equal(m!.header, 'first@customer.example')
    t.equal(m!.senderType, 'GUEST')
    t.equal(m!.senderName, 'Jane Doe')
    t.equal(m!.body, 'Hello,\n\nmy login fails since this morning.\n\nJane')
    const [c] = await conversationsOf(app, channelId)
    t.equal(c!.subject, 'Cannot log in')
    t.match(c!.emailRef, /^[0-9a-z]{10}$/)
    t.equal(c!.status, 'OPEN')
    const [g] = await sql<{ name: string; email: string; verified: boolean }[]>`SELECT name, email, verified FROM guests WHERE id = ${c!.guestId}`
    t.same(g, { name: 'Jane Doe', email: 'jane.doe@customer.example', verified: false }, 'the guest: display name, address lower-cased, unverified')
    first = { conversationId: c!.id, guestId: c!.guestId }

    // Parley writes nothing to the mailbox: the mail is still there, unflagged (not even \Seen).
    const client = await dv.client()
    const lock = await client.getMailboxLock('INBOX', { readOnly: true })
    try {
      const fetched = await client.fetchOne('*', { flags: true, envelope: true })
      t.equal(fetched && fetched.envelope?.messageId, '<first@customer.example>')
      // \Recent is the server's session flag (still there: the reader only EXAMINEd the mailbox).
      t.same(fetched && [...(fetched.flags ?? [])].filter((f) => f !== '\\Recent'), [], 'no flag set by the reader (no \\Seen)')
    } finally {
      lock.release()
      await client.logout()
    }

    const res = await app.inject({ method: 'GET', url: `/conversations/${c!.id}`, headers: h })
    t.equal(res.statusCode, 200)
    t.equal(res.json().subject, 'Cannot log in', 'the API shows the subject')
    const [status] = await sql<{ state: string; at: string | null }[]>`SELECT email_state AS state, email_last_sync_at AS at FROM channels WHERE id = ${channelId}`
    t.equal(status!.state, 'ok')
    t.ok(status!.at, 'lastSyncAt is set by the reader')
  })

  await t.test('original.eml: attached for members, invisible to the visitor', async (t) => {
    const res = await app.inject({ method: 'GET', url: `/conversations/${first.conversationId}/messages`, headers: h })
    const [msg] = res.json().data
    t.equal(msg.attachments.length, 1)
    const eml = msg.attachments[0]
    t.equal(eml.filename, 'original.eml')
    t.equal(eml.contentType, 'message/rfc822')
    const media = await app.inject({ method: 'GET', url: eml.url, headers: h })
    t.equal(media.statusCode, 200)
    t.match(media.body, /Message-ID: <first@customer\.example>/, 'the whole mail, headers included')
    t.match(media.headers['content-disposition'], /^attachment/)

    // The guest's own session (as if it used the widget) sees its message without the original.
    const { token } = app.deps.visitorTokens.sign({ guestId: first.guestId, channelId, workspaceId: ws.workspaceId })
    const vh = { 'x-visitor-session': token }
    const asVisitor = await app.inject({ method: 'GET', url: `/conversations/${first.conversationId}/messages`, headers: vh })
    t.equal(asVisitor.statusCode, 200, asVisitor.body)
    t.same(asVisitor.json().data[0].attachments, [], 'no original.eml in the visitor’s list')
    t.equal((await app.inject({ method: 'GET', url: eml.url, headers: vh })).statusCode, 404, 'nor through /media')
    const files = await app.inject({ method: 'GET', url: `/conversations/${first.conversationId}/attachments`, headers: vh })
    t.same(files.json().data, [], 'nor in the files tab')
    const memberFiles = await app.inject({ method: 'GET', url: `/conversations/${first.conversationId}/attachments`, headers: h })
    t.equal(memberFiles.json().data.length, 1, 'members have it in the files tab')
  })

  await t.test('a reply naming our Message-ID threads, its quoted history removed', async (t) => {
    await dv.append(
      rawMail(
        {
          From: 'Jane Doe <jane.doe@customer.example>',
          Subject: 'Re: Cannot log in',
          'Message-ID': '<second@customer.example>',
          'In-Reply-To': '<first@customer.example>',
          References: '<first@customer.example>',
        },
        'It works again, thanks.\n\nOn Tue, Nov 24, 2026 at 3:04 PM Acme Support <support@example.test> wrote:\n> Please try again.\n>\n> Hello,\n> my login fails\n',
      ),
    )
    await until(2)
    const msgs = await messagesOf(app, first.conversationId)
    t.equal(msgs.length, 2, 'joined the first conversation')
    t.equal(msgs[1]!.body, 'It works again, thanks.', 'quoted history removed')
    t.equal((await conversationsOf(app, channelId)).length, 1, 'no new conversation')
  })

  await t.test('a RESOLVED conversation reopens on a reply', async (t) => {
    const close = await app.inject({ method: 'PATCH', url: `/conversations/${first.conversationId}/close`, headers: h, payload: {} })
    t.equal(close.statusCode, 200, close.body)
    await dv.append(
      rawMail(
        { From: 'jane.doe@customer.example', Subject: 'Re: Cannot log in', 'Message-ID': '<third@customer.example>', References: '<first@customer.example> <second@customer.example>' },
        'Broken again.',
      ),
    )
    await until(3)
    const [c] = await conversationsOf(app, channelId)
    t.equal(c!.status, 'OPEN', 'reopened by the reply (References)')
  })

  await t.test('[#ref] in the subject threads for the guest, not for another sender', async (t) => {
    const [c] = await conversationsOf(app, channelId)
    await dv.append(rawMail({ From: 'Jane <jane.doe@customer.example>', Subject: `Re: Cannot log in [#${c!.emailRef}]` }, 'Headers lost, token kept.'))
    await until(4)
    t.equal((await messagesOf(app, c!.id)).length, 4, 'the token threads the guest’s mail')

    await dv.append(rawMail({ From: 'Mallory <mallory@elsewhere.example>', Subject: `Re: Cannot log in [#${c!.emailRef}]` }, 'Let me in.'))
    await until(5)
    const all = await conversationsOf(app, channelId)
    t.equal(all.length, 2, 'another sender with the token starts its own conversation')
    t.not(all[1]!.guestId, c!.guestId)
    t.equal((await messagesOf(app, c!.id)).length, 4, 'nothing was added to the guest’s conversation')
  })

  await t.test('the same Message-ID twice is stored once', async (t) => {
    const raw = rawMail({ From: 'dup@customer.example', Subject: 'Twice', 'Message-ID': '<dup@customer.example>' }, 'Once only.')
    await dv.append(raw)
    await dv.append(raw)
    await dv.append(rawMail({ From: 'dup@customer.example', Subject: 'Marker', 'Message-ID': '<marker@customer.example>' }, 'marker'))
    await waitFor(async () => (await inbound()).some((m) => m.header === 'marker@customer.example'), 10_000, 100)
    const dups = (await inbound()).filter((m) => m.header === 'dup@customer.example')
    t.equal(dups.length, 1)
  })

  await t.test('auto-replies and bounces start nothing and join nothing', async (t) => {
    const before = (await conversationsOf(app, channelId)).length
    const beforeMsgs = (await messagesOf(app, first.conversationId)).length
    await dv.append(rawMail({ From: 'jane.doe@customer.example', Subject: 'Out of office', 'Auto-Submitted': 'auto-replied', 'In-Reply-To': '<first@customer.example>' }, 'I am away.'))
    await dv.append(rawMail({ From: 'Mail Delivery System <MAILER-DAEMON@mx.example>', Subject: 'Undelivered Mail' }, 'Could not deliver.'))
    await dv.append(rawMail({ From: 'news@list.example', Subject: 'Newsletter', Precedence: 'bulk' }, 'News.'))
    await dv.append(rawMail({ From: 'after@customer.example', Subject: 'After the automatic ones', 'Message-ID': '<after-auto@customer.example>' }, 'real'))
    await waitFor(async () => (await inbound()).some((m) => m.header === 'after-auto@customer.example'), 10_000, 100)
    t.equal((await conversationsOf(app, channelId)).length, before + 1, 'only the real mail started a conversation')
    t.equal((await messagesOf(app, first.conversationId)).length, beforeMsgs, 'the auto-reply did not join its thread')
  })

  await t.test('attachments: allowed ones kept, a refused one skipped with a SYSTEM note', async (t) => {
    const boundary = 'parts'
    const raw = [
      'From: Files <files@customer.example>',
      'Subject: Two files',
      'Message-ID: <files@customer.example>',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'See the files.',
      `--${boundary}`,
      'Content-Type: text/csv; name="data.csv"',
      'Content-Disposition: attachment; filename="data.csv"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('a,b\n1,2\n').toString('base64'),
      `--${boundary}`,
      'Content-Type: application/x-msdownload; name="setup.exe"',
      'Content-Disposition: attachment; filename="setup.exe"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 0x90)]).toString('base64'),
      `--${boundary}--`,
      '',
    ].join('\r\n')
    await dv.append(raw)
    await waitFor(async () => (await inbound()).some((m) => m.header === 'files@customer.example'), 10_000, 100)
    const m = (await inbound()).find((x) => x.header === 'files@customer.example')!
    const res = await app.inject({ method: 'GET', url: `/conversations/${m.conversationId}/messages`, headers: h })
    const [msg, note] = res.json().data
    t.equal(msg.body, 'See the files.')
    t.same(msg.attachments.map((a: { filename: string }) => a.filename).sort(), ['data.csv', 'original.eml'])
    t.equal(note.senderType, 'SYSTEM')
    t.equal(note.private, true, 'a note for the team')
    t.match(note.body, /setup\.exe/)
  })

  await t.test('per sender: at most VISITOR_CONVERSATIONS_PER_HOUR new conversations an hour', async (t) => {
    for (let i = 0; i < 4; i++) {
      await dv.append(rawMail({ From: 'busy@customer.example', Subject: `Question ${i}`, 'Message-ID': `<busy-${i}@customer.example>` }, `question ${i}`))
    }
    await dv.append(rawMail({ From: 'calm@customer.example', Subject: 'Marker', 'Message-ID': '<calm@customer.example>' }, 'after'))
    await waitFor(async () => (await inbound()).some((m) => m.header === 'calm@customer.example'), 10_000, 100)
    const [busy] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM conversations c JOIN guests g ON g.id = c.guest_id WHERE g.email = 'busy@customer.example'`
    t.equal(busy!.n, 3, 'the fourth started nothing')
    t.notOk((await inbound()).some((m) => m.header === 'busy-3@customer.example'), 'and was not stored')
  })

  await t.test('a reply to the Message-ID of Parley’s own (outbound) mail threads', async (t) => {
    const reply = await app.inject({ method: 'POST', url: `/conversations/${first.conversationId}/messages`, headers: ws.agent.headers, payload: { body: 'Please try once more.' } })
    t.equal(reply.statusCode, 201, reply.body)
    const [out] = await sql<{ h: string }[]>`SELECT message_id_header AS h FROM message_emails WHERE message_id = ${reply.json().id} AND direction = 'out'`
    t.ok(out, 'the agent’s reply has its outgoing Message-ID')
    const before = (await messagesOf(app, first.conversationId)).length
    await dv.append(rawMail({ From: 'Jane Doe <jane.doe@customer.example>', Subject: 'Re: Cannot log in', 'Message-ID': '<to-outbound@customer.example>', 'In-Reply-To': `<${out!.h}>` }, 'Done, it works.'))
    await waitFor(async () => (await inbound()).some((m) => m.header === 'to-outbound@customer.example'), 10_000, 100)
    const msgs = await messagesOf(app, first.conversationId)
    t.equal(msgs.length, before + 1, 'joined the conversation of the outbound mail')
    t.equal(msgs.at(-1)!.body, 'Done, it works.')
  })

  await t.test('events: conversation:updated and message:new as for web chat; the guest’s room without original.eml', async (t) => {
    const seen: { rooms: string[]; event: string; payload: { conversationId?: string; message?: { body: string; attachments: { filename: string }[] } } }[] = []
    const events = app.deps.events
    const publish = events.publish.bind(events)
    // A spy on the real publisher (the events still go out through Redis).
    events.publish = (rooms, event, payload) => {
      seen.push({ rooms, event, payload: payload as (typeof seen)[number]['payload'] })
      publish(rooms, event, payload)
    }
    t.teardown(() => {
      events.publish = publish
    })
    await dv.append(rawMail({ From: 'Evan <evan@customer.example>', Subject: 'Events', 'Message-ID': '<events@customer.example>' }, 'Watch the events.'))
    await waitFor(() => seen.filter((e) => e.event === 'message:new').length >= 2, 10_000, 50)
    const conv = seen.find((e) => e.event === 'conversation:updated')
    t.ok(conv, 'conversation:updated for the new conversation')
    t.ok(conv!.rooms.includes(`ws:${ws.workspaceId}`), 'to the members')
    const news = seen.filter((e) => e.event === 'message:new')
    const members = news.find((e) => e.rooms.includes(`ws:${ws.workspaceId}`))!
    const guest = news.find((e) => e.rooms.some((r) => r.startsWith('guest:')))!
    t.equal(members.payload.message!.body, 'Watch the events.')
    t.same(members.payload.message!.attachments.map((a) => a.filename), ['original.eml'], 'members get the original')
    t.same(guest.payload.message!.attachments, [], 'the guest’s room does not')
    t.notOk(members.rooms.some((r) => r.startsWith('guest:')), 'the members’ copy never goes to the guest')
  })
})

t.test('email.status: a refused login is the channel’s error; fixed settings are picked up', async (t) => {
  const { app, ws, dv } = await emailSetup(t)
  const imap = dv.imap()
  const res = await app.inject({
    method: 'POST',
    url: '/channels',
    headers: ws.admin.headers,
    payload: {
      name: 'Wrong password',
      kind: 'email',
      email: {
        address: 'other@example.test',
        imap: { ...imap, password: 'wrong' },
        smtp: { host: '127.0.0.1', port: 2525, secure: false, username: 'x', password: 'y' },
      },
    },
  })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  const statusOf = async () => (await app.inject({ method: 'GET', url: '/channels', headers: ws.admin.headers })).json().data.find((c: { id: string }) => c.id === id).email.status
  await waitFor(async () => (await statusOf()).state === 'error', 15_000, 200)
  const failed = await statusOf()
  t.match(failed.error, /auth|login|fail/i, 'the error says why')
  t.notMatch(failed.error, /wrong/, 'never the password')
  t.equal(failed.lastSyncAt, null, 'never synced')

  const patch = await app.inject({ method: 'PATCH', url: `/channels/${id}`, headers: ws.admin.headers, payload: { email: { imap: { password: imap.password } } } })
  t.equal(patch.statusCode, 200, patch.body)
  await waitFor(async () => (await statusOf()).lastSyncAt !== null, 30_000, 200)
  const ok = await statusOf()
  t.equal(ok.error, null)
  t.ok(ok.lastSyncAt, 'synced')
})
