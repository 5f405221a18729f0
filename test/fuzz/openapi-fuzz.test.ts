import { createHash } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import fc from 'fast-check'
import t from 'tap'
import { build, seedGuest, seedWorkspace, type SeededGuest, type SeededWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

/**
 * The fuzz sweep (issue 12): every operation of the OpenAPI document gets generated hostile input
 * with valid credentials (wrong types, huge and unicode strings, NUL, `__proto__`/`constructor`
 * keys, odd path parameters, unknown query parameters, deep and wide bodies, wrong content
 * types). No answer may be a 500 (or any 5xx but the contract's 503s), every error must carry
 * the contract's body `{ statusCode, error, code, message }` without a stack trace, and nothing
 * may be logged at error level.
 *
 * Data-driven: operations, parameters and body schemas come from `app.swagger()`, so a route
 * added later is swept without touching this file. Operations that need special setup are
 * listed in SPECIAL below, with how they are handled.
 *
 * Seeded and replayable: the seed is printed at the start and with every failure.
 *   FUZZ_SEED=<seed> npx tap test/fuzz/openapi-fuzz.test.ts    replays a run
 *   FUZZ_OP='POST /conversations' FUZZ_SEED=<seed> ...         replays one operation
 *   FUZZ_PATH=<path> (printed with a failure, with FUZZ_OP)     replays exactly its shrunk case
 *   FUZZ_RUNS=300 ...                                          digs deeper (default 40 per operation)
 */

const BASE_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31)
const RUNS = Number(process.env.FUZZ_RUNS ?? 40)
const ONLY = process.env.FUZZ_OP
const PATH = process.env.FUZZ_PATH
/** How long one request may take before the sweep calls it hung (they take milliseconds). */
const ANSWER_MS = 5000

/**
 * Operations that need more than generic credentials, and how the sweep handles them. An
 * operation not listed here needs nothing special. DELETE operations always run last, so the
 * seeded rows they remove serve the other operations first.
 */
const SPECIAL: Record<string, string> = {
  'POST /billing/webhooks/provider-a':
    'raw signed body: the app gets PROVIDER_A_WEBHOOK_SECRET, so hostile bodies reach the signature check (400), never processing; signed events are covered by test/billing',
  'POST /billing/webhooks/provider-b':
    'verified through the provider B API, not run here: the route answers 503 NOT_CONFIGURED (a contract answer); test/billing/provider-b.test.ts runs a real verification server',
  'DELETE /conversations/{id}': 'destructive: runs after every other operation',
  'DELETE /canned-responses/{id}': 'destructive: runs after every other operation (ids: a workspace, an owner-personal and an agent-personal response)',
  'POST /uploads':
    'multipart/form-data: generated forms (parts in any order, hostile names, filenames and types, foreign ids, cut short, wrong boundary) besides the JSON bodies; /media/{id} gets the seeded uploads as ids',
  'DELETE /teams/{id}': 'destructive: runs after every other operation (ids: two seeded teams, one auto-assigning)',
  'DELETE /auth/members/{userId}': 'destructive: runs last; valid userIds are the agent and a spare member, never the calling owner',
  'DELETE /labels/{id}': 'destructive: runs after every other operation (ids: two seeded labels)',
  'DELETE /views/{id}': 'destructive: runs after every other operation (ids: a workspace, an owner-personal and an agent-personal view)',
  'POST /conversations/bulk': 'its delete action is destructive: runs with the DELETE operations, after every other one',
}

/** 5xx answers the contract defines (a dependency or configuration missing), by code. */
const CONTRACT_5XX = new Set(['NOT_CONFIGURED', 'IDP_UNAVAILABLE', 'DEPENDENCY_UNAVAILABLE', 'STORAGE_UNAVAILABLE'])

type Schema = Record<string, any>
interface Operation {
  key: string
  method: string
  path: string
  params: { name: string; in: 'path' | 'query' | 'header'; schema: Schema }[]
  body?: Schema
  /** The operation takes multipart/form-data (POST /uploads): the sweep sends generated forms. */
  multipart?: boolean
}

function operationsOf(doc: any): Operation[] {
  const ops: Operation[] = []
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      ops.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).map((p: any) => ({ name: p.name, in: p.in, schema: p.schema ?? {} })),
        body: op.requestBody?.content?.['application/json']?.schema,
        multipart: !!op.requestBody?.content?.['multipart/form-data'],
      })
    }
  }
  const last = (o: Operation) => (o.method === 'DELETE' || o.key === 'POST /conversations/bulk' ? 1 : 0)
  return ops.sort((a, b) => last(a) - last(b) || a.key.localeCompare(b.key))
}

// ---------------------------------------------------------------------------------- values

/** `arb` in about `percent` of the cases, else null. */
const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | null> =>
  fc.oneof({ weight: percent, arbitrary: arb }, { weight: 100 - percent, arbitrary: fc.constant(null) })

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c))

/** Strings that have broken web services before. */
const NASTY = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '../../../etc/passwd',
  '..%2F..%2F',
  '%00',
  '%ZZ',
  '__proto__',
  'constructor',
  'prototype',
  'null',
  'undefined',
  'true',
  '-1',
  '0',
  '1e309',
  'NaN',
  '99999999999999999999999999',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '{"$gt":""}',
  '\u202e\u0301\u200b',
  '\ud800',
  '😀'.repeat(60),
  'Ω≈ç√∫˜µ≤≥÷',
  'ＡＢＣ',
]

const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...NASTY),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  // Around and past the contract's limits (names 200, e-mail 254, search 200, message 10,000).
  fc.constantFrom(199, 200, 201, 254, 255, 256, 501, 10_000, 10_001, 20_000).map((n) => 'x'.repeat(n)),
)

const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.integer(),
    fc.constantFrom(2 ** 53 + 1, -(2 ** 31), 1e308, -0, 0.5),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'role', 'workspaceId'), fc.string({ maxLength: 8 })), tie('v'), {
      maxKeys: 3,
    }),
  ),
})).v

/** A value that fits the schema (more or less: enough to get past validation now and then). */
function fitting(schema: Schema, ids: string[]): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== 'object') return hostileValue
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (Array.isArray(alternatives) && alternatives.length) return fc.oneof(...alternatives.map((s: Schema) => fitting(s, ids)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'string': {
      if (schema.format === 'uuid' || /0-9a-f/i.test(String(schema.pattern ?? ''))) return fc.oneof(fc.constantFrom(...ids), fc.uuid())
      if (schema.format === 'email') return fc.constantFrom('ann@example.test', 'B.O.B+tag@Example.TEST ', 'x@y.z')
      if (schema.format === 'date-time') return fc.constantFrom(new Date().toISOString(), '2026-02-30T25:61:00Z')
      const min = schema.minLength ?? 0
      return fc.string({ minLength: min, maxLength: Math.max(min, Math.min(schema.maxLength ?? 40, 40)) })
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 1000, 1_000_000) })
    case 'number':
      return fc.double({ noNaN: true, min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(fitting(schema.items ?? {}, ids), { maxLength: 4 })
    case 'object': {
      const props = Object.entries<Schema>(schema.properties ?? {})
      if (!props.length) return fc.constant({})
      const required = new Set<string>(schema.required ?? [])
      const model: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [name, s] of props) model[name] = fc.oneof({ weight: 5, arbitrary: fitting(s, ids) }, { weight: 1, arbitrary: hostileValue })
      // Mostly with the required fields, sometimes without any of them.
      return fc.oneof(
        { weight: 3, arbitrary: fc.record(model, { requiredKeys: props.map(([n]) => n).filter((n) => required.has(n)) }) },
        { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
      )
    }
    default:
      return hostileValue
  }
}

// ---------------------------------------------------------------------------------- requests

/** Whole-body shapes no schema expects. */
const RAW_BODIES = [
  '',
  'null',
  '[]',
  '"text"',
  '123',
  '{',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '\u0000',
  '['.repeat(40) + ']'.repeat(40),
  '{"a":'.repeat(40) + '1' + '}'.repeat(40),
  JSON.stringify(Array.from({ length: 20_000 }, () => 0)),
  '{"__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"admin":true}}}',
  `{"a":"${'x'.repeat(1_100_000)}"}`,
]

interface Case {
  caller: 'owner' | 'agent' | 'visitor' | 'otherVisitor' | 'badVisitor' | 'anonymous' | 'both'
  workspace: 'own' | 'other' | 'garbage' | 'missing' | 'upper'
  path: { value: string; raw: boolean }[]
  query: { name: string; value: string; raw: boolean }[]
  headers: Record<string, string>
  body: { contentType: string; text: string; bytes?: Buffer } | null
}

interface World {
  ws: SeededWorkspace
  other: SeededWorkspace
  guest: SeededGuest
  /** A visitor of the other workspace. */
  otherGuest: SeededGuest
  conversations: string[]
  otherIds: string[]
  spareMember: string
  /** Canned responses (workspace and personal) and mentions (of the owner and of the agent). */
  canned: string[]
  mentions: string[]
  /** Labels and saved views (section 17). */
  labels: string[]
  views: string[]
  /** Uploaded files (one pending, one attached): the ids of /media/{id}. */
  attachments: string[]
  /** Teams (one manual, one round_robin with the agent in it). */
  teams: string[]
}

/** Valid values for a path parameter, by name (a new name gets every seeded id). */
function pathPool(world: World, op: Operation, name: string): string[] {
  if (name === 'userId') return [world.ws.agent.userId, world.spareMember]
  if (name === 'guestId') return [world.guest.guestId]
  if (name === 'channelId') return [world.ws.channelId]
  if (name === 'id' && op.path.startsWith('/channels')) return [world.ws.channelId]
  if (name === 'id' && op.path.startsWith('/canned-responses')) return world.canned
  if (name === 'id' && op.path.startsWith('/mentions')) return world.mentions
  if (name === 'id' && op.path.startsWith('/labels')) return world.labels
  if (name === 'id' && op.path.startsWith('/views')) return world.views
  if (name === 'id' && op.path.startsWith('/media')) return world.attachments
  if (name === 'id' && op.path.startsWith('/teams')) return world.teams
  if (name === 'id') return world.conversations
  return [...world.conversations, world.guest.guestId, world.ws.channelId, world.ws.agent.userId]
}

function caseArb(op: Operation, world: World): fc.Arbitrary<Case> {
  const ids = [...world.conversations, world.guest.guestId, world.ws.channelId, world.ws.workspaceId, ...world.labels]
  const pathArbs = op.params
    .filter((p) => p.in === 'path')
    .map((p) =>
      fc.record({
        value: fc.oneof(
          { weight: 7, arbitrary: fc.constantFrom(...pathPool(world, op, p.name)) },
          { weight: 2, arbitrary: fc.constantFrom(...world.otherIds) },
          { weight: 1, arbitrary: fc.oneof(fc.constantFrom('x'.repeat(600), '0', 'not-a-uuid'), fc.uuid(), fc.uuid().map((u) => u.toUpperCase())) },
          { weight: 2, arbitrary: hostileString },
        ),
        raw: fc.boolean(),
      }),
    )
  const queryArbs = op.params
    .filter((p) => p.in === 'query')
    .map((p) =>
      sometimes(
        fc.oneof(
          { weight: 5, arbitrary: fitting(p.schema, ids).map((v) => [{ name: p.name, value: String(v), raw: false }]) },
          { weight: 2, arbitrary: hostileString.map((v) => [{ name: p.name, value: v, raw: false }]) },
          { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%00', '%', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '&&', '==').map((v) => [{ name: p.name, value: v, raw: true }]) },
          // The same parameter twice: an array where a scalar is expected.
          { weight: 1, arbitrary: fc.tuple(fitting(p.schema, ids), hostileString).map(([a, b]) => [{ name: p.name, value: String(a), raw: false }, { name: p.name, value: b, raw: false }]) },
        ),
        60,
      ),
    )
  const unknownQuery = sometimes(
    fc.tuple(fc.constantFrom('debug', '__proto__', 'constructor', '__proto__[admin]', 'constructor[prototype][x]', 'a[b][c]', 'x'.repeat(300), ''), hostileString).map(([name, value]) => [{ name, value, raw: false }]),
    15,
  )
  const headerParams = op.params.filter((p) => p.in === 'header')
  const headerArb = fc.tuple(
    ...headerParams.map((p) =>
      sometimes(fc.oneof(fc.string({ unit: printable, maxLength: 300 }), fc.constantFrom('x'.repeat(8000), ' ', '0')).map((v) => [p.name, v] as const), 50),
    ),
  )
  const jsonBody = (schema: Schema | undefined) =>
    fc
      .tuple(
        schema ? fitting(schema, ids) : hostileValue,
        sometimes(fc.tuple(fc.constantFrom('role', 'workspaceId', 'status', 'id', 'extra', 'a'.repeat(500)), hostileValue), 15),
        sometimes(fc.constantFrom('__proto__', 'constructor'), 10),
      )
      .map(([value, extra, proto]) => {
        let text = JSON.stringify(value === undefined ? null : value)
        if (value && typeof value === 'object' && !Array.isArray(value)) {
          const o = { ...(value as Record<string, unknown>), ...(extra ? { [extra[0]]: extra[1] } : {}) }
          text = JSON.stringify(o)
          // An own __proto__/constructor key survives only when written into the text.
          if (proto) text = text.replace(/^\{/, proto === '__proto__' ? '{"__proto__":{"admin":true},' : '{"constructor":{"prototype":{"admin":true}},').replace(/,\}$/, '}')
        }
        return { contentType: 'application/json', text }
      })
  const bodyArb: fc.Arbitrary<Case['body']> = op.multipart
    ? fc.oneof(
        { weight: 6, arbitrary: multipartBody(world, ids) },
        { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES).map((text) => ({ contentType: 'application/json', text })) },
        { weight: 1, arbitrary: fc.constant(null) },
      )
    : op.body
    ? fc.oneof(
        { weight: 6, arbitrary: jsonBody(op.body) },
        { weight: 2, arbitrary: fc.constantFrom(...RAW_BODIES).map((text) => ({ contentType: 'application/json', text })) },
        { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/jsonx').map((contentType) => ({ contentType, text: '{"a":1}' })) },
        { weight: 1, arbitrary: fc.constant(null) },
      )
    : fc.oneof(
        { weight: 4, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: jsonBody(undefined) },
        { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES).map((text) => ({ contentType: 'application/json', text })) },
      )
  return fc.record({
    caller: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('owner', 'owner', 'owner', 'agent', 'visitor', 'visitor') },
      { weight: 1, arbitrary: fc.constantFrom('otherVisitor', 'badVisitor', 'anonymous', 'both') },
    ),
    workspace: fc.oneof({ weight: 12, arbitrary: fc.constant('own' as const) }, { weight: 1, arbitrary: fc.constantFrom('other', 'garbage', 'missing', 'upper') }),
    path: fc.tuple(...pathArbs),
    query: fc.tuple(...queryArbs, unknownQuery).map((parts) => parts.flatMap((p) => p ?? [])),
    headers: headerArb.map((pairs) => Object.fromEntries(pairs.filter((p): p is readonly [string, string] => p !== null))),
    body: bodyArb,
  }) as fc.Arbitrary<Case>
}

/** A tiny real PNG (1x1), a PDF head, text and noise: what a hostile form may carry as its file. */
const FILE_BYTES = [
  Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex'),
  Buffer.from('%PDF-1.4\n%%EOF\n'),
  Buffer.from('plain text, ü\n'),
  Buffer.from('<svg onload=alert(1)>'),
  Buffer.alloc(0),
  Buffer.from([0, 1, 2, 3, 255, 254]),
]

/**
 * A multipart/form-data body for POST /uploads: parts in any order and number, hostile names,
 * filenames and declared types, a valid or foreign conversation id, sometimes cut short or with a
 * broken boundary.
 */
function multipartBody(world: World, ids: string[]): fc.Arbitrary<NonNullable<Case['body']>> {
  const boundary = 'fuzzBoundary7MA4YWxkTrZu0gW'
  const field = fc.record({
    name: fc.oneof({ weight: 4, arbitrary: fc.constant('conversationId') }, { weight: 1, arbitrary: fc.oneof(fc.constantFrom('file', 'extra', '__proto__', ''), hostileString) }),
    value: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...world.conversations) },
      { weight: 1, arbitrary: fc.constantFrom(...ids, ...world.otherIds) },
      { weight: 1, arbitrary: hostileString },
    ),
  })
  const file = fc.record({
    name: fc.oneof({ weight: 4, arbitrary: fc.constant('file') }, { weight: 1, arbitrary: hostileString }),
    filename: fc.oneof(fc.constantFrom('a.png', '../../etc/passwd', 'x\u202egnp.exe', 'é'.repeat(300), ''), hostileString),
    type: fc.constantFrom('application/octet-stream', 'image/png', 'image/jpeg', 'application/pdf', 'text/plain', 'image/svg+xml', 'application/octet-stream', '', 'x'.repeat(500)),
    data: fc.constantFrom(...FILE_BYTES),
  })
  const part = fc.oneof(field.map((f) => ({ kind: 'field' as const, ...f })), file.map((f) => ({ kind: 'file' as const, ...f })))
  return fc
    .record({
      parts: fc.oneof({ weight: 3, arbitrary: fc.tuple(field, file).map(([f, x]) => [{ kind: 'field' as const, ...f }, { kind: 'file' as const, ...x }]) }, { weight: 2, arbitrary: fc.array(part, { maxLength: 5 }) }),
      cut: sometimes(fc.nat({ max: 400 }), 15),
      badBoundary: fc.oneof({ weight: 1, arbitrary: fc.constant(true) }, { weight: 9, arbitrary: fc.constant(false) }),
    })
    .map(({ parts, cut, badBoundary }) => {
      const chunks: Buffer[] = []
      const q = (s: string) => s.replace(/[\r\n"]/g, '_')
      for (const p of parts) {
        if (p.kind === 'field') chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${q(p.name)}"\r\n\r\n${p.value}\r\n`))
        else {
          chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${q(p.name)}"; filename="${q(p.filename)}"\r\nContent-Type: ${q(p.type)}\r\n\r\n`))
          chunks.push(p.data, Buffer.from('\r\n'))
        }
      }
      chunks.push(Buffer.from(`--${boundary}--\r\n`))
      let bytes = Buffer.concat(chunks)
      if (cut !== null) bytes = bytes.subarray(0, Math.min(cut, bytes.length))
      const contentType = `multipart/form-data; boundary=${badBoundary ? 'other' : boundary}`
      return { contentType, text: '', bytes }
    })
}

/** encodeURIComponent, except that a lone surrogate (which it refuses) is sent as its WTF-8 bytes. */
function enc(s: string): string {
  try {
    return encodeURIComponent(s)
  } catch {
    return [...s]
      .map((ch) => {
        const cp = ch.codePointAt(0)!
        if (cp < 0xd800 || cp > 0xdfff) return encodeURIComponent(ch)
        return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')
      })
      .join('')
  }
}

function requestOf(op: Operation, c: Case, world: World) {
  let i = 0
  const url = op.path.replace(/\{[^}]+\}/g, () => {
    const p = c.path[i++]!
    return p.raw ? p.value : enc(p.value)
  })
  const query = c.query.map((q) => `${enc(q.name)}=${q.raw ? q.value : enc(q.value)}`).join('&')
  const headers: Record<string, string> = { ...c.headers }
  const member = c.caller === 'agent' ? world.ws.agent : world.ws.owner
  if (c.caller === 'owner' || c.caller === 'agent' || c.caller === 'both') {
    headers.authorization = member.headers.authorization
    const wsId = { own: world.ws.workspaceId, other: world.other.workspaceId, garbage: '../x', missing: '', upper: world.ws.workspaceId.toUpperCase() }[c.workspace]
    if (wsId) headers['x-workspace-id'] = wsId
  }
  if (c.caller === 'visitor' || c.caller === 'both') headers['x-visitor-session'] = world.guest.session
  if (c.caller === 'otherVisitor') headers['x-visitor-session'] = world.otherGuest.session
  if (c.caller === 'badVisitor') headers['x-visitor-session'] = `${world.guest.session.slice(0, -4)}AAAA`
  if (c.body) headers['content-type'] = c.body.contentType
  return { method: op.method, url: query ? `${url}?${query}` : url, headers, payload: c.body?.bytes ?? c.body?.text }
}

/**
 * Why an answer breaks the contract, or null. Error-level log lines count as a failure unless the
 * answer is one of the contract's 503s (those are logged at error on purpose: an operator must
 * see a provider calling an unconfigured webhook or a dependency being down).
 */
function violation(res: { statusCode: number; body: string; headers: Record<string, unknown> }, newErrors: Record<string, unknown>[]): string | null {
  const contract503 = res.statusCode === 503 && CONTRACT_5XX.has(String((safeJson(res.body) as { code?: unknown } | null)?.code))
  if (newErrors.length && !contract503) {
    const e = newErrors[0] as { msg?: string; err?: { message?: string; stack?: string } }
    return `logged at error level: ${e.msg} ${e.err?.message ?? ''} ${String(e.err?.stack ?? '').split('\n').slice(0, 4).join(' | ')}`
  }
  if (res.statusCode < 400) return null
  let body: Record<string, unknown>
  try {
    body = JSON.parse(res.body)
  } catch {
    return `${res.statusCode} with a body that is not JSON: ${res.body.slice(0, 200)}`
  }
  const keys = Object.keys(body ?? {}).sort().join(',')
  if (keys !== 'code,error,message,statusCode') return `${res.statusCode} body has fields [${keys}]: ${res.body.slice(0, 300)}`
  if (body.statusCode !== res.statusCode) return `statusCode ${body.statusCode} in a ${res.statusCode} answer`
  if (body.error !== STATUS_CODES[res.statusCode]) return `error '${body.error}' for ${res.statusCode}`
  if (typeof body.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(body.code)) return `code '${body.code}' is not SCREAMING_SNAKE`
  if (typeof body.message !== 'string' || body.message === '') return 'empty message'
  if (/\n\s+at |node_modules|\.(ts|js):\d+/.test(body.message)) return `message carries a stack trace: ${body.message.slice(0, 300)}`
  if (res.statusCode >= 500 && !(res.statusCode === 503 && CONTRACT_5XX.has(body.code))) return `${res.statusCode} ${body.code}: ${body.message}`
  return null
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** Long runs of one character shortened, so a failure stays readable. */
const short = (text: string) => text.replace(/(.)\1{39,}/g, (run, ch: string) => `${ch.repeat(8)}…(${run.length} chars)`).slice(0, 3000)

const seedOf = (key: string) => (BASE_SEED + createHash('sha256').update(key).digest().readInt32BE(0)) | 0

t.test('fuzz sweep over every operation of the OpenAPI document', async (t) => {
  t.comment(`FUZZ_SEED=${BASE_SEED} (FUZZ_RUNS=${RUNS}) replays this run`)
  const { app, logs } = await build(t, {
    captureLogs: true,
    env: { PROVIDER_A_WEBHOOK_SECRET: 'whsec_fuzz_sweep', JOBS_WORKER: 'false' },
  })
  const ws = await seedWorkspace(app, 'Fuzz A')
  const other = await seedWorkspace(app, 'Fuzz B')
  const guest = await seedGuest(app, ws)
  const otherGuest = await seedGuest(app, other)
  const conversations = [(await startConversation(app, guest)).id, (await startConversation(app, await seedGuest(app, ws, 'Second'))).id]
  const otherConversation = (await startConversation(app, otherGuest)).id
  const spareMember = (await ws.addMember('agent', 'Spare Agent')).userId
  const canned: string[] = []
  for (const [scope, headers] of [['workspace', ws.owner.headers], ['personal', ws.owner.headers], ['personal', ws.agent.headers]] as const) {
    const res = await app.inject({ method: 'POST', url: '/canned-responses', headers, payload: { shortcut: `fuzz-${canned.length}`, body: 'Hi {{visitor.name | "there"}}', scope } })
    canned.push(res.json().id)
  }
  for (const [author, mentioned] of [[ws.agent, ws.owner], [ws.owner, ws.agent]] as const) {
    await app.inject({ method: 'POST', url: `/conversations/${conversations[0]}/messages`, headers: author.headers, payload: { body: 'note', private: true, mentions: [mentioned.userId] } })
  }
  const mentions = (await app.deps.sql<{ id: string }[]>`SELECT id FROM mentions`).map((r) => r.id)
  const labels: string[] = []
  for (const name of ['fuzz-a', 'fuzz-b']) {
    labels.push((await app.inject({ method: 'POST', url: '/labels', headers: ws.owner.headers, payload: { name, color: '#abcdef' } })).json().id)
  }
  await app.inject({ method: 'PUT', url: `/conversations/${conversations[0]}/labels`, headers: ws.owner.headers, payload: { labelIds: labels } })
  const views: string[] = []
  for (const [scope, headers] of [['workspace', ws.owner.headers], ['personal', ws.owner.headers], ['personal', ws.agent.headers]] as const) {
    const res = await app.inject({ method: 'POST', url: '/views', headers, payload: { name: `fuzz ${views.length}`, scope, filters: { labelIds: [labels[0]], status: 'active' } } })
    views.push(res.json().id)
  }
  const uploaded: string[] = []
  for (const data of [FILE_BYTES[0]!, FILE_BYTES[1]!]) {
    const boundary = 'seedBoundary'
    const payload = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="conversationId"\r\n\r\n${conversations[0]}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="seed"\r\n\r\n`),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ])
    const res = await app.inject({ method: 'POST', url: '/uploads', headers: { ...guest.headers, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
    uploaded.push(res.json().id)
  }
  await app.inject({ method: 'POST', url: `/conversations/${conversations[0]}/messages`, headers: guest.headers, payload: { body: 'file', attachmentIds: [uploaded[1]] } })
  const teams: string[] = []
  for (const payload of [{ name: 'Fuzz manual' }, { name: 'Fuzz auto', assignment: 'round_robin', capacity: 2 }]) {
    teams.push((await app.inject({ method: 'POST', url: '/teams', headers: ws.owner.headers, payload })).json().id)
  }
  await app.inject({ method: 'PUT', url: `/teams/${teams[1]}/members/${encodeURIComponent(ws.agent.userId)}`, headers: ws.owner.headers, payload: {} })
  const world: World = {
    ws,
    other,
    guest,
    otherGuest,
    conversations,
    otherIds: [otherConversation, otherGuest.guestId, other.channelId, other.workspaceId, other.owner.userId],
    spareMember,
    canned,
    mentions,
    labels,
    views,
    attachments: uploaded,
    teams,
  }

  const ops = operationsOf(app.swagger()).filter((o) => !ONLY || o.key === ONLY)
  t.ok(ops.length >= (ONLY ? 1 : 20), `${ops.length} operations in the OpenAPI document`)
  for (const key of Object.keys(SPECIAL)) {
    if (!ONLY) t.ok(ops.some((o) => o.key === key), `SPECIAL entry ${key} still names an operation`)
  }

  let requests = 0
  const statuses = new Map<number, number>()
  for (const op of ops) {
    const seed = seedOf(op.key)
    const result = await fc.check(
      fc.asyncProperty(caseArb(op, world), async (c) => {
        const seen = logs.length
        // An answer that never comes is a failure with its request, not the file's timeout.
        let timer: NodeJS.Timeout | undefined
        const res = await Promise.race([
          app.inject(requestOf(op, c, world)),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_MS} ms`)), ANSWER_MS)
          }),
        ]).finally(() => clearTimeout(timer))
        requests++
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        const errors = logs.slice(seen).filter((l) => (l.level as number) >= 50)
        const why = violation(res, errors)
        if (why) throw new Error(`${res.statusCode}: ${why}`)
      }),
      { seed, numRuns: RUNS, ...(PATH ? { path: PATH } : {}) },
    )
    if (!result.failed) {
      t.pass(`${op.key}${SPECIAL[op.key] ? ` (special: ${SPECIAL[op.key]})` : ''}`)
      continue
    }
    const request = result.counterexample ? requestOf(op, result.counterexample[0], world) : undefined
    t.fail(
      [
        `${op.key}: ${(result.errorInstance as Error | undefined)?.message ?? 'failed'}`,
        `request: ${short(JSON.stringify(request ?? null))}`,
        `replay: FUZZ_SEED=${BASE_SEED} FUZZ_OP='${op.key}' FUZZ_PATH='${result.counterexamplePath}' npx tap test/fuzz/openapi-fuzz.test.ts`,
      ].join('\n'),
    )
  }
  t.comment(`${requests} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
})
