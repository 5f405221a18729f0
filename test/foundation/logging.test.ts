import t from 'tap'
import { build, seedWorkspace } from '../helper.js'

t.test('one JSON line per request with id, status and duration; credentials redacted', async (t) => {
  const { app, logs, rawLog } = await build(t, { captureLogs: true })
  const secrets = {
    authorization: 'Bearer eyJsecret.member.token',
    'x-visitor-session': 'visitor-session-secret-value',
    'x-channel-token': 'ct_channel_token_secret',
    'provider-a-signature': 't=1,v1=deadbeefsignature',
    'provider-b-transmission-sig': 'provider-b-signature-value',
  }
  const res = await app.inject({ method: 'GET', url: '/health', headers: { ...secrets, 'x-request-id': 'req-abc-123', 'user-agent': 'probe/1' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-request-id'], 'req-abc-123', 'an incoming request id is kept')

  const lines = logs.filter((l) => l.msg === 'request completed')
  t.equal(lines.length, 1, 'exactly one line for the request')
  const line = lines[0] as Record<string, any>
  t.equal(line.reqId, 'req-abc-123')
  t.equal(line.statusCode, 200)
  t.type(line.durationMs, 'number')
  t.equal(line.req.method, 'GET')
  t.equal(line.req.headers['user-agent'], 'probe/1', 'harmless headers are kept for ops')
  for (const [name, value] of Object.entries(secrets)) {
    t.notOk(rawLog().includes(value.replace('Bearer ', '')), `${name} value is not in the log`)
    t.equal(line.req.headers[name], '[Redacted]')
  }
})

t.test('query strings are logged with people data and credentials redacted, names kept', async (t) => {
  const { app, logs, rawLog } = await build(t, { captureLogs: true })
  const ws = await seedWorkspace(app)
  const secrets = ['alice.guest@example.test', 'EC-7PAYTOKEN', 'cs_live_SESSION', 'sk_SECRETVALUE', 'sigVALUE', 'hunter2pw', 'k3yVALUE', 'bob@x.test', 'pct-tok']
  const requests = [
    // A member searching for a guest's address.
    { url: `/conversations/search?q=${encodeURIComponent(secrets[0])}&limit=5`, headers: ws.owner.headers },
    // What a provider appends to a return URL, and other names of credentials in any case.
    {
      url:
        `/billing/provider-a/return?status=success&token=${secrets[1]}&PayerID=P-1&checkout_SESSION_id=${secrets[2]}` +
        `&client_secret=${secrets[3]}&X-Signature=${secrets[4]}&Password=${secrets[5]}&api_key=${secrets[6]}` +
        `&email=${encodeURIComponent(secrets[7])}&%74oken=${secrets[8]}&q=%E0%A4%A`,
      headers: {},
    },
  ]
  for (const r of requests) await app.inject({ method: 'GET', url: r.url, headers: { ...r.headers, referer: `https://shop.example/cart?email=${secrets[7]}&step=2` } })

  const urls = logs.filter((l) => l.msg === 'request completed').map((l) => (l.req as { url: string }).url)
  t.equal(urls.length, 2)
  t.equal(urls[0], '/conversations/search?q=[Redacted]&limit=5', 'q redacted, limit kept')
  t.equal(
    urls[1],
    '/billing/provider-a/return?status=success&token=[Redacted]&PayerID=P-1&checkout_SESSION_id=[Redacted]' +
      '&client_secret=[Redacted]&X-Signature=[Redacted]&Password=[Redacted]&api_key=[Redacted]&email=[Redacted]' +
      '&%74oken=[Redacted]&q=[Redacted]',
    'every sensitive value redacted, every name and harmless value kept (names judged percent-decoded)',
  )
  const referer = (logs.find((l) => l.msg === 'request completed')!.req as { headers: Record<string, string> }).headers.referer
  t.equal(referer, 'https://shop.example/cart?email=[Redacted]&step=2', 'the referer query too')
  for (const secret of secrets) {
    t.notOk(rawLog().includes(secret) || rawLog().includes(encodeURIComponent(secret)), `${secret} is not in the log`)
  }
})
