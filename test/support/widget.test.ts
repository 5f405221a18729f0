import t from 'tap'
import { PresenceStore } from '../../src/gateway/presence.js'
import { withinOfficeHours } from '../../src/support/widget-settings.js'
import { build, redisOf, seedWorkspace } from '../helper.js'

const FIELDS = ['awayMessage', 'channelId', 'color', 'csatEnabled', 'expectedReplyTime', 'greeting', 'name', 'online', 'withinOfficeHours']

t.test('widget settings on channels: defaults, PATCH replaces the fields it names, validation', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const patch = (payload: unknown, headers = ws.admin.headers) =>
    app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers, payload: payload as object })
  const list = (await app.inject({ method: 'GET', url: '/channels', headers: ws.agent.headers })).json()
  t.same(list.data[0].widget, { color: '#1f6feb', greeting: '', awayMessage: '', expectedReplyTime: 'minutes', officeHours: null, csatEnabled: false }, 'defaults')

  let res = await patch({ widget: { color: '#AA3300', greeting: 'Hi there', officeHours: { timezone: 'europe/paris', days: { mon: [['09:00', '12:00'], ['13:00', '24:00']] } } } })
  t.equal(res.statusCode, 200)
  t.same(res.json().widget, {
    color: '#AA3300',
    greeting: 'Hi there',
    awayMessage: '',
    expectedReplyTime: 'minutes',
    officeHours: { timezone: 'Europe/Paris', days: { mon: [['09:00', '12:00'], ['13:00', '24:00']] } },
    csatEnabled: false,
  }, 'the zone is stored in its canonical spelling')
  res = await patch({ widget: { csatEnabled: true, expectedReplyTime: 'hours' } })
  t.match(res.json().widget, { color: '#AA3300', greeting: 'Hi there', csatEnabled: true, expectedReplyTime: 'hours', officeHours: { timezone: 'Europe/Paris' } }, 'other fields kept')
  res = await patch({ widget: { officeHours: null } })
  t.equal(res.json().widget.officeHours, null, 'null clears office hours')

  for (const [widget, message] of [
    [{ color: 'red' }, /color/],
    [{ color: '#12345' }, /color/],
    [{ greeting: 'x'.repeat(501) }, /greeting/],
    [{ expectedReplyTime: 'week' }, /expectedReplyTime/],
    [{ csatEnabled: 'yes' }, /csatEnabled/],
    [{ officeHours: { timezone: 'Mars/Olympus', days: {} } }, /widget.officeHours.timezone/],
    [{ officeHours: { timezone: 'UTC', days: { mon: [['17:00', '09:00']] } } }, /widget.officeHours.days.mon.0/],
    [{ officeHours: { timezone: 'UTC', days: { mon: [['09:00', '09:00']] } } }, /widget.officeHours.days.mon.0/],
    [{ officeHours: { timezone: 'UTC', days: { mon: [['24:00', '24:00']] } } }, /mon/],
    [{ officeHours: { timezone: 'UTC', days: { mon: [['9:00', '17:00']] } } }, /mon/],
    [{ officeHours: { timezone: 'UTC', days: { mon: [['09:00', '24:01']] } } }, /mon/],
    [{ officeHours: { timezone: 'UTC', days: { mon: [['09:00']] } } }, /mon/],
    [{ officeHours: { timezone: 'UTC', days: { funday: [] } } }, /funday/],
    [{ officeHours: { timezone: 'UTC' } }, /days/],
    [{ secret: 1 }, /unknown field 'widget.secret'/],
  ] as const) {
    const r = await patch({ widget })
    t.equal(r.statusCode, 400, JSON.stringify(widget))
    t.match(r.json(), { code: 'VALIDATION_ERROR', message })
  }
  t.equal((await patch({ widget: { color: '#000000' } }, ws.agent.headers)).statusCode, 403, 'agents lack channels:manage')
  const [{ widget }] = await app.deps.sql<{ widget: Record<string, unknown> }[]>`SELECT widget FROM channels WHERE id = ${ws.channelId}`
  t.same(Object.keys(widget).sort(), ['color', 'csatEnabled', 'expectedReplyTime', 'greeting', 'officeHours'], 'only named fields are stored; refused PATCHes changed nothing')
  t.equal(widget.color, '#AA3300')
})

t.test('office hours in the channel zone, daylight-saving correct', async (t) => {
  const paris = { timezone: 'Europe/Paris', days: { mon: [['09:00', '17:00']], sat: [['22:00', '24:00']], sun: [['00:00', '02:00']] } }
  // Monday 2026-01-05: Paris is UTC+1; Monday 2026-07-06: UTC+2.
  t.equal(withinOfficeHours(paris, new Date('2026-01-05T08:00:00Z')), true, 'winter 09:00 Paris = 08:00 UTC')
  t.equal(withinOfficeHours(paris, new Date('2026-01-05T07:59:00Z')), false)
  t.equal(withinOfficeHours(paris, new Date('2026-07-06T07:00:00Z')), true, 'summer 09:00 Paris = 07:00 UTC')
  t.equal(withinOfficeHours(paris, new Date('2026-07-06T15:00:00Z')), false, 'summer 17:00 Paris: closed (end excluded)')
  t.equal(withinOfficeHours(paris, new Date('2026-07-06T14:59:00Z')), true)
  t.equal(withinOfficeHours(paris, new Date('2026-01-06T10:00:00Z')), false, 'a day left out is closed')
  // An overnight shift is two windows on two days: Saturday 22:00 .. Sunday 02:00 Paris.
  t.equal(withinOfficeHours(paris, new Date('2026-01-10T22:30:00Z')), true, 'Saturday 23:30 Paris')
  t.equal(withinOfficeHours(paris, new Date('2026-01-11T00:30:00Z')), true, 'Sunday 01:30 Paris')
  t.equal(withinOfficeHours(paris, new Date('2026-01-11T01:00:00Z')), false, 'Sunday 02:00 Paris')
  // The night Paris moves to summer time (2026-03-29, 02:00 -> 03:00): 01:30 UTC is 03:30 local.
  const sunday = { timezone: 'Europe/Paris', days: { sun: [['03:00', '04:00']] } }
  t.equal(withinOfficeHours(sunday, new Date('2026-03-29T01:30:00Z')), true, 'after the spring-forward jump')
  t.equal(withinOfficeHours(sunday, new Date('2026-03-22T01:30:00Z')), false, 'a week earlier the same UTC time is 02:30')
  t.equal(withinOfficeHours(null), true, 'no office hours: always within')
  const kolkata = { timezone: 'Asia/Kolkata', days: { mon: [['09:30', '10:00']] } }
  t.equal(withinOfficeHours(kolkata, new Date('2026-01-05T04:00:00Z')), true, 'half-hour zone: 09:30 IST')
  t.equal(withinOfficeHours(kolkata, new Date('2026-01-05T03:59:00Z')), false)
})

t.test('GET /support/widget/:channelId', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { WIDGET_CACHE_MS: '0' } })
  const ws = await seedWorkspace(app)
  const url = `/support/widget/${ws.channelId}`
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { greeting: 'Hello!', csatEnabled: true } } })

  let res = await app.inject({ method: 'GET', url, headers: { origin: 'https://shop.example' } })
  const etag = res.headers.etag as string

  await t.test('the public configuration: no secrets, cacheable 30 s, open to any origin, tagged', async (t) => {
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.same(Object.keys(body).sort(), FIELDS, 'no secrets, no member data')
    t.match(body, { channelId: ws.channelId, name: 'Website', color: '#1f6feb', greeting: 'Hello!', online: false, withinOfficeHours: true, csatEnabled: true })
    t.equal(res.headers['cache-control'], 'public, max-age=30')
    t.equal(res.headers['access-control-allow-origin'], 'https://shop.example', 'any origin: it runs on customers\' sites')
    t.match(etag, /^"[A-Za-z0-9_-]+"$/)
  })

  await t.test('If-None-Match with its tag: 304, also in a list of tags', async (t) => {
    res = await app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })
    t.equal(res.statusCode, 304)
    t.equal(res.body, '')
    t.equal(res.headers.etag, etag)
    res = await app.inject({ method: 'GET', url, headers: { 'if-none-match': `W/"other", ${etag}` } })
    t.equal(res.statusCode, 304, 'a list of tags, weak form accepted')
  })

  await t.test('online follows presence (away does not count); office hours close it', async (t) => {
    // A member comes online (the gateway's presence store on the same Redis): the body and its tag change.
    const presence = new PresenceStore({ redis: redisOf(app), prefix: redisPrefix, gatewayId: 'test-gw', entryTtlMs: 30_000 })
    await presence.add(ws.workspaceId, ws.agent.userId, 'sock-1')
    res = await app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })
    t.equal(res.statusCode, 200)
    t.equal(res.json().online, true)
    t.not(res.headers.etag, etag)
    await presence.setStatus(ws.workspaceId, ws.agent.userId, 'away')
    t.equal((await app.inject({ method: 'GET', url })).json().online, false, 'away does not count')
    await presence.remove(ws.workspaceId, ws.agent.userId, 'sock-1')

    await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { officeHours: { timezone: 'UTC', days: {} } } } })
    t.equal((await app.inject({ method: 'GET', url })).json().withinOfficeHours, false, 'every day closed')
  })

  await t.test('channel token 401, unknown or malformed channel 404/400, inactive 404, unknown query 400', async (t) => {
    // Channel token, unknown and inactive channels.
    await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { requireChannelToken: true } })
    res = await app.inject({ method: 'GET', url })
    t.same([res.statusCode, res.json().code], [401, 'INVALID_CHANNEL_TOKEN'])
    t.equal((await app.inject({ method: 'GET', url, headers: { 'x-channel-token': 'ct_wrong' } })).statusCode, 401)
    t.equal((await app.inject({ method: 'GET', url, headers: { 'x-channel-token': ws.channelToken } })).statusCode, 200)
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '%00']) {
      res = await app.inject({ method: 'GET', url: `/support/widget/${id}` })
      t.equal(res.statusCode, id === '%00' ? 400 : 404, id)
      if (id !== '%00') t.equal(res.json().code, 'CHANNEL_NOT_FOUND')
    }
    await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { active: false } })
    res = await app.inject({ method: 'GET', url, headers: { 'x-channel-token': ws.channelToken } })
    t.same([res.statusCode, res.json().code], [404, 'CHANNEL_NOT_FOUND'], 'inactive: 404')
    t.equal((await app.inject({ method: 'GET', url: `${url}?x=1` })).statusCode, 400, 'unknown query parameter')
  })
})

t.test('GET /support/* is rate limited per client address (SUPPORT_RATE_LIMIT_PER_MIN)', async (t) => {
  const { app } = await build(t, { env: { SUPPORT_RATE_LIMIT_PER_MIN: '3', PUBLIC_RATE_LIMIT_PER_MIN: '3' } })
  const ws = await seedWorkspace(app)
  const get = (remoteAddress: string, url = `/support/widget/${ws.channelId}`) => app.inject({ method: 'GET', url, remoteAddress })
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await get('10.0.0.1')).statusCode)
  t.same(statuses, [200, 200, 200, 429])
  const limited = await get('10.0.0.1')
  t.match(limited.json(), { statusCode: 429, code: 'RATE_LIMITED' })
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.equal((await get('10.0.0.2')).statusCode, 200, 'another address has its own budget')
  t.equal((await get('10.0.0.1', '/api/public/conversations/00000000-0000-4000-8000-000000000000/status')).statusCode, 404, '/api/public/* is another budget')
})

t.test('WIDGET_CACHE_MS: changes show within the cache time', async (t) => {
  const { app } = await build(t, { env: { WIDGET_CACHE_MS: '300' } })
  const ws = await seedWorkspace(app)
  const url = `/support/widget/${ws.channelId}`
  t.equal((await app.inject({ method: 'GET', url })).json().greeting, '')
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { greeting: 'New' } } })
  t.equal((await app.inject({ method: 'GET', url })).json().greeting, '', 'served from the cache at once')
  await new Promise((r) => setTimeout(r, 350))
  t.equal((await app.inject({ method: 'GET', url })).json().greeting, 'New', 'and fresh after it')
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { active: false } })
  await new Promise((r) => setTimeout(r, 350))
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, 'a deactivated channel is 404 within the cache time')
})

t.test('GET /support/widget: the cacheable answer varies by x-channel-token (a shared cache keeps one per token)', async (t) => {
  const { app } = await build(t, { env: { WIDGET_CACHE_MS: '0' } })
  const ws = await seedWorkspace(app)
  const url = `/support/widget/${ws.channelId}`
  const varies = (v: unknown) =>
    String(v ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { requireChannelToken: true } })

  let res = await app.inject({ method: 'GET', url, headers: { 'x-channel-token': ws.channelToken, origin: 'https://shop.example' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'public, max-age=30')
  t.ok(varies(res.headers.vary).includes('x-channel-token'), `Vary names x-channel-token (${res.headers.vary})`)
  t.ok(varies(res.headers.vary).includes('origin'), 'the CORS Vary: Origin is kept beside it')
  const etag = res.headers.etag as string

  res = await app.inject({ method: 'GET', url, headers: { 'x-channel-token': ws.channelToken, 'if-none-match': etag } })
  t.equal(res.statusCode, 304, 'ETag revalidation still works')
  t.equal(res.headers.etag, etag)
  t.ok(varies(res.headers.vary).includes('x-channel-token'), 'a 304 carries the same Vary as the 200')
  t.equal(res.headers['cache-control'], 'public, max-age=30')

  // What a cache keyed without the token would have handed out: the 200 above, to a caller
  // without the token. With Vary, that caller reaches Parley and gets its 401.
  res = await app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })
  t.equal(res.statusCode, 401, 'no token: 401, never the cached 304/200')
})
