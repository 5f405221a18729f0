import t from 'tap'
import { build } from '../helper.js'

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
