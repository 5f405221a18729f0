import { test } from 'tap'
import { messageIds, parseMail } from '../../src/email/parse.js'
import { stripQuoted } from '../../src/email/quoted.js'
import { refOfSubject } from '../../src/email/ref.js'
import { rawMail } from '../support/dovecot.js'

const mail = (headers: Record<string, string>, body = 'Hello') => Buffer.from(rawMail(headers, body))

test('quoted history: each client style loses its history, keeps the newest text', async (t) => {
  const cases: [string, string, string][] = [
    [
      'Gmail',
      'Thanks, that fixed it!\n\nOn Tue, Nov 24, 2026 at 3:04 PM Parley Support <support@example.test> wrote:\n> Hello,\n> try restarting.\n',
      'Thanks, that fixed it!',
    ],
    [
      'Gmail, header wrapped over two lines',
      'Thanks!\n\nOn Tue, Nov 24, 2026 at 3:04 PM Ann via Acme Support <\nsupport@example.test> wrote:\n\n> Hello,\n> try restarting.\n',
      'Thanks!',
    ],
    [
      'Apple Mail (quote header inside the quote, signature kept)',
      'Sounds good.\n\nSent from my iPhone\n\n> On 24 Nov 2026, at 15:04, Parley Support <support@example.test> wrote:\n> \n> Hello,\n> try restarting.\n',
      'Sounds good.\n\nSent from my iPhone',
    ],
    [
      'Outlook, From with an address',
      'Still broken.\n\nBest regards,\nJane\n\nFrom: Parley Support <support@example.test>\nSent: Tuesday, November 24, 2026 3:04 PM\nTo: Jane Doe <jane@example.test>\nSubject: RE: Login [#abc]\n\nHello,\ntry restarting.\n',
      'Still broken.\n\nBest regards,\nJane',
    ],
    [
      'Outlook, rule and a From without an address',
      'Still broken.\n\n________________________________\nFrom: Parley Support\nSent: Tuesday, November 24, 2026 3:04 PM\nTo: Jane Doe\nSubject: RE: Login\n\nHello,\ntry restarting.\n',
      'Still broken.',
    ],
    [
      'Outlook made from HTML (bold header names)',
      'Works now.\n\n*From:* Parley Support\n*Sent:* Tuesday, November 24, 2026 3:04 PM\n*To:* Jane\n\nHello\n',
      'Works now.',
    ],
    ['Outlook, Original Message', 'Still broken.\n\n-----Original Message-----\nFrom: Parley Support [mailto:support@example.test]\nSent: Tuesday\nTo: Jane\n\nHello\n', 'Still broken.'],
    ['Thunderbird', 'Yes please.\n\nOn 24/11/2026 15:04, Parley Support wrote:\n> Hello,\n> try restarting.\n', 'Yes please.'],
    ['French Gmail', 'Merci !\n\nLe mar. 24 nov. 2026 à 15:04, Parley Support <support@example.test> a écrit :\n> Bonjour\n', 'Merci !'],
    ['inline answers keep their quotes', '> Did you restart?\nYes I did.\n> And?\nStill broken.\n', '> Did you restart?\nYes I did.\n> And?\nStill broken.'],
    ['no history, a signature', 'Hello,\n\nmy login fails.\n\n-- \nJane Doe\n', 'Hello,\n\nmy login fails.\n\n-- \nJane Doe'],
    ['only quotes (a bare forward) keeps everything', '> only quotes\n> here\n', '> only quotes\n> here'],
    ['CRLF line ends', 'Fine.\r\n\r\nOn Tue, Nov 24, 2026 at 3:04 PM A <a@example.test> wrote:\r\n> old\r\n', 'Fine.'],
  ]
  for (const [name, input, want] of cases) t.equal(stripQuoted(input), want, name)
})

test('Message-ID lists: brackets removed, duplicates dropped', async (t) => {
  t.same(messageIds('<a@x> <b@y>\r\n <a@x>'), ['a@x', 'b@y'])
  t.same(messageIds(['<a@x>', '<c@z>']), ['a@x', 'c@z'])
  t.same(messageIds('bare@id'), ['bare@id'])
  t.same(messageIds(undefined), [])
})

test('parseMail: headers, sender, subject, body', async (t) => {
  const m = await parseMail(
    mail(
      {
        From: '"Jane Doe" <Jane.Doe@Example.TEST>',
        To: 'support@example.test',
        Subject: 'Re:   Login\r\n broken [#abcdefghjk]',
        'Message-ID': '<m2@mail.example.test>',
        'In-Reply-To': '<out1@parley.example>',
        References: '<in0@mail.example.test> <out1@parley.example>',
      },
      'It still fails.\n\nOn Tue, Nov 24, 2026 at 3:04 PM Support <support@example.test> wrote:\n> try again\n',
    ),
  )
  t.equal(m.messageId, 'm2@mail.example.test')
  t.equal(m.inReplyTo, 'out1@parley.example')
  t.same(m.references, ['in0@mail.example.test', 'out1@parley.example'])
  t.same(m.sender, { email: 'jane.doe@example.test', name: 'Jane Doe' }, 'e-mail lower-cased, name from the display name')
  t.equal(m.subject, 'Re: Login broken [#abcdefghjk]', 'unfolded, spaces collapsed')
  t.equal(m.body, 'It still fails.')
  t.match(m.text, /try again/, 'text keeps the whole part')
  t.equal(m.automatic, false)
  t.same(m.attachments, [])

  const r = await parseMail(mail({ From: 'Jane <jane@example.test>', 'Reply-To': 'Team Jane <Team@Example.test>', Subject: 'x' }))
  t.same(r.sender, { email: 'team@example.test', name: 'Team Jane' }, 'Reply-To wins over From')
  t.same(r.from, { email: 'jane@example.test', name: 'Jane' })

  const bare = await parseMail(mail({ From: 'jane@example.test' }))
  t.same(bare.sender, { email: 'jane@example.test', name: '' }, 'no display name: empty name')
  t.equal(bare.subject, '')
})

test('parseMail: a mail without a Message-ID gets one made from its bytes', async (t) => {
  const raw = Buffer.from('From: a@example.test\r\nSubject: none\r\n\r\nbody\r\n')
  const a = await parseMail(raw)
  const b = await parseMail(Buffer.from(raw))
  t.match(a.messageId, /^[0-9a-f]{64}@parley\.invalid$/)
  t.equal(a.messageId, b.messageId, 'the same bytes, the same id')
})

test('parseMail: HTML only becomes text; attachments are listed', async (t) => {
  const html = await parseMail(
    mail({ From: 'a@example.test', 'Content-Type': 'text/html; charset=utf-8' }, '<html><body><p>Hello <b>there</b></p><p>Second line</p><script>x()</script></body></html>'),
  )
  t.match(html.body, /Hello there/)
  t.match(html.body, /Second line/)
  t.notMatch(html.body, /<p>|<b>/, 'no markup left')

  const boundary = 'b1'
  const raw = [
    'From: a@example.test',
    'Subject: files',
    'Message-ID: <files@example.test>',
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See attached.',
    `--${boundary}`,
    'Content-Type: text/csv; name="data.csv"',
    'Content-Disposition: attachment; filename="data.csv"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('a,b\n1,2\n').toString('base64'),
    `--${boundary}--`,
    '',
  ].join('\r\n')
  const m = await parseMail(Buffer.from(raw))
  t.equal(m.body, 'See attached.')
  t.equal(m.attachments.length, 1)
  t.equal(m.attachments[0]!.filename, 'data.csv')
  t.equal(m.attachments[0]!.content.toString(), 'a,b\n1,2\n')
})

test('auto-replies and bounces are recognised; ordinary mail is not', async (t) => {
  const cases: [string, Record<string, string>, boolean][] = [
    ['Auto-Submitted: auto-replied', { 'Auto-Submitted': 'auto-replied' }, true],
    ['Auto-Submitted: auto-generated', { 'Auto-Submitted': 'auto-generated' }, true],
    ['Auto-Submitted: no', { 'Auto-Submitted': 'no' }, false],
    ['X-Autoreply', { 'X-Autoreply': 'yes' }, true],
    ['X-Autorespond', { 'X-Autorespond': 'Out of office' }, true],
    ['Precedence: bulk', { Precedence: 'bulk' }, true],
    ['Precedence: junk', { Precedence: 'junk' }, true],
    ['Precedence: list', { Precedence: 'List' }, true],
    ['Precedence: first-class', { Precedence: 'first-class' }, false],
    ['multipart/report', { 'Content-Type': 'multipart/report; report-type=delivery-status; boundary="z"' }, true],
    ['MAILER-DAEMON sender', { From: 'Mail Delivery System <MAILER-DAEMON@mx.example.test>' }, true],
    ['postmaster sender', { From: 'postmaster@mx.example.test' }, true],
    ['a person', {}, false],
  ]
  for (const [name, headers, want] of cases) {
    const body = headers['Content-Type']?.startsWith('multipart/report') ? '--z\r\nContent-Type: text/plain\r\n\r\nundeliverable\r\n--z--' : 'Hello'
    const m = await parseMail(mail({ From: 'Jane <jane@example.test>', Subject: 'x', ...headers }, body))
    t.equal(m.automatic, want, name)
  }
})

test('the [#ref] token of a subject', async (t) => {
  const cases: [string, string | null][] = [
    ['Re: Cannot log in [#abcdefghjk]', 'abcdefghjk'],
    ['RE: AW: Cannot log in [#ABCDEFGHJK]', 'abcdefghjk'],
    ['[#0123456789] at the start', '0123456789'],
    ['Fwd: Re: x [#abcdefghjk] (was: y)', 'abcdefghjk'],
    ['no token', null],
    ['too short [#abc]', null],
    ['not Crockford (i, l, o, u) [#abcdefghij]', null],
    ['no hash [abcdefghjk]', null],
    ['', null],
  ]
  for (const [subject, want] of cases) t.equal(refOfSubject(subject), want, subject || '(empty)')
})

test('control characters PostgreSQL cannot store are removed', async (t) => {
  const m = await parseMail(Buffer.from('From: "Ja\u0000ne" <jane@example.test>\r\nSubject: Null\u0000 byte\r\nMessage-ID: <nul@example.test>\r\n\r\nbefore\u0000after\ttab\r\n'))
  t.equal(m.body, 'beforeafter\ttab')
  t.equal(m.subject, 'Null byte')
  t.equal(m.sender!.name, 'Jane')
})
