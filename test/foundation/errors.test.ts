import { Type } from '@sinclair/typebox'
import t, { type Test } from 'tap'
import type { App } from '../../src/app.js'
import { NoBody } from '../../schemas/common.js'
import { build } from '../helper.js'

// A route declared like every real one, to exercise the cross-cutting error contract.
const register = (app: App) => {
  app.post(
    '/__probe',
    {
      config: { access: 'public' },
      schema: {
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), note: Type.Optional(Type.String()) }, { additionalProperties: false }),
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) }, { additionalProperties: false }),
      },
    },
    async (request) => ({ ok: true, name: request.body.name }),
  )
  app.get('/__boom', { config: { access: 'public' } }, async () => {
    throw new Error('secret detail: password=hunter2 at db.internal:5432')
  })
}

const shape = (t: Test, body: Record<string, unknown>, statusCode: number, code: string) => {
  t.same(Object.keys(body).sort(), ['code', 'error', 'message', 'statusCode'], 'error body has exactly the contract fields')
  t.equal(body.statusCode, statusCode)
  t.equal(body.code, code)
  t.type(body.error, 'string')
  t.type(body.message, 'string')
}

t.test('the error contract', async (t) => {
  const { app } = await build(t, { register })
  const json = { 'content-type': 'application/json' }

  let res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: { name: 'x' } })
  t.equal(res.statusCode, 200, 'a valid body passes')

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: { name: 'x', role: 'owner' } })
  t.equal(res.statusCode, 400)
  shape(t, res.json(), 400, 'VALIDATION_ERROR')
  t.match(res.json().message, /unknown field 'role'/)

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: {} })
  t.equal(res.statusCode, 400)
  t.match(res.json().message, /name/, 'a missing field is named')

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: { name: 'x'.repeat(201) } })
  t.equal(res.statusCode, 400)
  t.match(res.json().message, /'name'/, 'a too long field is named')

  res = await app.inject({ method: 'POST', url: '/__probe?limit=101', headers: json, payload: { name: 'x' } })
  t.equal(res.statusCode, 400, 'out of range query is 400, not clamped')
  t.match(res.json().message, /limit/)

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: '{"name": "x",' })
  t.equal(res.statusCode, 400)
  shape(t, res.json(), 400, 'INVALID_JSON')

  res = await app.inject({ method: 'POST', url: '/__probe', headers: { 'content-type': 'text/plain' }, payload: 'name=x' })
  t.equal(res.statusCode, 415)
  shape(t, res.json(), 415, 'UNSUPPORTED_MEDIA_TYPE')

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: JSON.stringify({ name: 'x', note: 'y'.repeat(1024 * 1024) }) })
  t.equal(res.statusCode, 413)
  shape(t, res.json(), 413, 'PAYLOAD_TOO_LARGE')

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: '{"__proto__": {"admin": true}, "name": "x"}' })
  t.equal(res.statusCode, 400, 'prototype poisoning is refused')

  res = await app.inject({ method: 'POST', url: '/__probe', headers: json, payload: { name: 'a\u0000b' } })
  t.equal(res.statusCode, 400, 'NUL in a body string is a 400, not a database error')
  t.match(res.json().message, /'name'/)
  res = await app.inject({ method: 'POST', url: '/__probe?limit=%00', headers: json, payload: { name: 'x' } })
  t.equal(res.statusCode, 400, 'NUL in the query string too')

  res = await app.inject({ method: 'GET', url: '/no/such/route' })
  t.equal(res.statusCode, 404)
  shape(t, res.json(), 404, 'NOT_FOUND')

  res = await app.inject({ method: 'GET', url: '/__boom' })
  t.equal(res.statusCode, 500)
  shape(t, res.json(), 500, 'INTERNAL_ERROR')
  t.notMatch(res.body, /hunter2|db\.internal|at .*\.ts/, 'a 500 hides its cause')
  t.ok(res.headers['x-request-id'], 'every answer carries its request id')
})

t.test('a route without config.access is refused at start-up', async (t) => {
  await t.rejects(
    build(t, { register: (app) => app.get('/__open', async () => ({})) }),
    /declares no config.access/,
  )
})

t.test('a write route without schema.body is refused at start-up; NoBody takes nothing, null or {}', async (t) => {
  await t.rejects(
    build(t, { register: (app) => app.delete('/__nobody', { config: { access: 'public' } }, async () => ({})) }),
    /declares no schema.body/,
  )
  const { app } = await build(t, {
    register: (app) => app.post('/__none', { config: { access: 'public' }, schema: { body: NoBody } }, async (request) => ({ body: request.body })),
  })
  const json = { 'content-type': 'application/json' }
  for (const payload of [undefined, '', 'null', '{}']) {
    const res = await app.inject({ method: 'POST', url: '/__none', headers: payload === undefined ? {} : json, payload })
    t.equal(res.statusCode, 200, `body ${JSON.stringify(payload)} is no body`)
    t.same(res.json().body, {})
  }
  const field = await app.inject({ method: 'POST', url: '/__none', headers: json, payload: { x: 1 } })
  t.equal(field.statusCode, 400)
  t.equal(field.json().message, "unknown field 'x'")
  t.equal((await app.inject({ method: 'POST', url: '/__none', headers: json, payload: '[1]' })).statusCode, 400, 'an array is not an empty body')
})

t.test("the router's own refusals answer with the contract's body (found by the fuzz sweep)", async (t) => {
  const { app } = await build(t)
  const long = 'x'.repeat(600) // past the router's maxParamLength (500)
  let res = await app.inject({ method: 'GET', url: `/conversations/${long}/messages` })
  t.equal(res.statusCode, 414)
  shape(t, res.json(), 414, 'URI_TOO_LONG')
  t.equal(res.json().error, 'URI Too Long')
  t.notMatch(res.body, /xxxxxxxxxx/, 'the path is not echoed')
  t.ok(res.headers['x-request-id'])

  res = await app.inject({ method: 'GET', url: '/conversations/%E0%A4%A/messages' })
  t.equal(res.statusCode, 400)
  shape(t, res.json(), 400, 'BAD_URL')
})
