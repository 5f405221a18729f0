import { test } from 'tap'
import { rawMail, startDovecot } from '../support/dovecot.js'

test('the Dovecot harness: APPEND places mail, a client reads it back, stop ends the server', async (t) => {
  const dv = await startDovecot()
  t.teardown(() => dv.stop())
  const uid1 = await dv.append(rawMail({ From: 'a@example.test', Subject: 'one' }, 'hello'))
  const uid2 = await dv.append(rawMail({ From: 'a@example.test', Subject: 'two' }, 'again'))
  t.equal(uid2, uid1 + 1, 'UIDs ascend')
  const c = await dv.client()
  const st = await c.status('INBOX', { messages: true, uidNext: true, uidValidity: true })
  t.equal(st && st.messages, 2)
  t.equal(st && st.uidNext, uid2 + 1)
  const lock = await c.getMailboxLock('INBOX')
  try {
    const m = await c.fetchOne(String(uid2), { source: true }, { uid: true })
    t.match(m && m.source!.toString(), /Subject: two/)
  } finally {
    lock.release()
  }
  await c.logout()
  await dv.stop()
  await t.rejects(dv.client(), 'the server is gone after stop')
})
