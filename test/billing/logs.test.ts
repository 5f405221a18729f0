import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import {
  CLIENT_ID_B, CLIENT_SECRET_B, eventA, eventB, headersB, postA, postB, providerBEnv, SECRET_A, SECRET_A_OLD, signA,
  startFakeProviderB, WEBHOOK_ID_B,
} from './fixtures.js'

t.test('no secret, signature or provider token reaches the log or an error body', async (t) => {
  const fake = await startFakeProviderB(t)
  // The production logger options (serializers, redaction) at debug level, written to memory.
  const { app, rawLog } = await build(t, {
    captureLogs: true,
    env: { LOG_LEVEL: 'debug', PROVIDER_A_WEBHOOK_SECRET: `${SECRET_A_OLD},${SECRET_A}`, ...providerBEnv(fake.url) },
  })
  t.teardown(() => { if (process.env.SHOW_LOG) console.error(rawLog()) })
  const logs = () => rawLog().split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const ws = await seedWorkspace(app)
  const meta = { workspaceId: ws.workspaceId }
  const bodies: string[] = []
  const sent: string[] = []

  // Provider A: accepted, duplicate, refused.
  const a = eventA('invoice.paid', { id: 'in_log', amount_paid: 100, currency: 'usd', metadata: meta })
  const sigA = signA(a)
  sent.push(sigA, sigA.split('v1=')[1])
  for (const [body, header] of [[a, sigA], [a, sigA], [a.replace('100', '900'), sigA], [a, signA(a, 'whsec_wrong')]] as const) {
    bodies.push((await postA(app, body, header)).body)
  }

  // Provider B: accepted, FAILURE, 5xx, token refused.
  const b = eventB('PAYMENT.CAPTURE.COMPLETED', { id: 'CAP-LOG', amount: { value: '1.00', currency_code: 'USD' }, custom_id: ws.workspaceId })
  for (const mode of ['SUCCESS', 'FAILURE', '500', '401'] as const) {
    fake.mode.verify = mode
    const h = headersB()
    sent.push(h['provider-b-transmission-sig'])
    bodies.push((await postB(app, b, h)).body)
  }
  fake.mode.verify = 'SUCCESS'

  t.ok(fake.issued.length >= 1, 'tokens were issued')
  t.ok(logs().length > 10, `captured ${logs().length} log lines`)
  t.ok(logs().some((l: { level: number }) => l.level === 20 || l.level === 30), 'debug/info lines are in the capture')
  const basic = Buffer.from(`${CLIENT_ID_B}:${CLIENT_SECRET_B}`).toString('base64')
  const secrets = [SECRET_A, SECRET_A_OLD, CLIENT_SECRET_B, WEBHOOK_ID_B, basic, ...fake.issued, ...sent]
  const log = rawLog()
  const errors = bodies.join('\n')
  for (const s of secrets) {
    t.notOk(log.includes(s), `log free of ${s.slice(0, 6)}…`)
    t.notOk(errors.includes(s), `error bodies free of ${s.slice(0, 6)}…`)
  }
  t.ok(log.includes('[Redacted]'), 'signature headers are logged redacted')
})
