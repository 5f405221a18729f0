import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { App } from '../../src/app.js'
import type { TestContext } from '../helper.js'

export const SECRET_A = `whsec_${randomBytes(16).toString('hex')}`
export const SECRET_A_OLD = `whsec_old_${randomBytes(16).toString('hex')}`
export const CLIENT_ID_B = 'client-b-id'
export const CLIENT_SECRET_B = `cs_${randomBytes(16).toString('hex')}`
export const WEBHOOK_ID_B = `WH-${randomBytes(8).toString('hex')}`

export const nowS = () => Math.floor(Date.now() / 1000)

/**
 * Provider A's scheme written independently of src/billing (as the provider's SDK would):
 * v1 = hex(HMAC-SHA256(secret, `${t}.${payload}`)).
 */
export function signA(payload: string, secret = SECRET_A, t = nowS()): string {
  const v1 = createHmac('sha256', secret).update(`${t}.${payload}`, 'utf8').digest('hex')
  return `t=${t},v1=${v1}`
}

/** header: the signature header (default: a valid one); null sends none. */
export async function postA(app: App, payload: string, header?: string | null, extra: Record<string, string> = {}) {
  const h = header === undefined ? signA(payload) : header
  return app.inject({
    method: 'POST',
    url: '/billing/webhooks/provider-a',
    headers: { 'content-type': 'application/json', ...(h === null ? {} : { 'provider-a-signature': h }), ...extra },
    payload,
  })
}

let seq = 0
export const uniq = (p: string) => `${p}_${Date.now().toString(36)}${(seq++).toString(36)}${randomBytes(3).toString('hex')}`

/** A provider A event body as JSON text. */
export function eventA(type: string, object: Record<string, unknown>, opts: { id?: string; created?: number } = {}): string {
  return JSON.stringify({ id: opts.id ?? uniq('evt'), object: 'event', type, created: opts.created ?? nowS(), data: { object } })
}

/** A provider B event body as JSON text. */
export function eventB(type: string, resource: Record<string, unknown>, opts: { id?: string; createTime?: string } = {}): string {
  return JSON.stringify({
    id: opts.id ?? uniq('WH'),
    event_type: type,
    create_time: opts.createTime ?? new Date().toISOString(),
    resource_type: type.startsWith('BILLING') ? 'subscription' : 'sale',
    resource,
  })
}

export const isoAt = (s: number) => new Date(s * 1000).toISOString()

export interface FakeProviderB {
  url: string
  /** Every request the fake received: path, headers and the exact body bytes. */
  requests: { path: string; headers: IncomingMessage['headers']; body: Buffer }[]
  tokenCalls: () => number
  verifyCalls: () => { path: string; headers: IncomingMessage['headers']; body: Buffer }[]
  /** Tokens the fake issued. */
  issued: string[]
  /** What the next verify calls answer. */
  mode: { verify: 'SUCCESS' | 'FAILURE' | '500' | 'hang' | '401'; token: 'ok' | '401'; expiresIn: number }
  /** Problems the fake found in the requests (bad auth, wrong grant, malformed body). */
  problems: string[]
}

/** A provider B API on 127.0.0.1 that checks what Parley sends it. */
export async function startFakeProviderB(t: TestContext): Promise<FakeProviderB> {
  const fake: FakeProviderB = {
    url: '',
    requests: [],
    issued: [],
    tokenCalls: () => fake.requests.filter((r) => r.path === '/v1/oauth2/token').length,
    verifyCalls: () => fake.requests.filter((r) => r.path === '/v1/notifications/verify-webhook-signature'),
    mode: { verify: 'SUCCESS', token: 'ok', expiresIn: 32400 },
    problems: [],
  }
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const path = req.url ?? ''
      fake.requests.push({ path, headers: req.headers, body })
      if (req.method === 'POST' && path === '/v1/oauth2/token') {
        const expected = `Basic ${Buffer.from(`${CLIENT_ID_B}:${CLIENT_SECRET_B}`).toString('base64')}`
        if (req.headers.authorization !== expected) fake.problems.push('token: wrong basic auth')
        if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) fake.problems.push('token: content-type')
        if (new URLSearchParams(body.toString()).get('grant_type') !== 'client_credentials') fake.problems.push('token: grant_type')
        if (fake.mode.token === '401') return send(res, 401, { error: 'invalid_client' })
        const token = `A21AA${randomBytes(12).toString('hex')}`
        fake.issued.push(token)
        return send(res, 200, { scope: 'x', access_token: token, token_type: 'Bearer', app_id: 'APP', expires_in: fake.mode.expiresIn })
      }
      if (req.method === 'POST' && path === '/v1/notifications/verify-webhook-signature') {
        const auth = req.headers.authorization ?? ''
        if (!fake.issued.some((tok) => auth === `Bearer ${tok}`)) fake.problems.push('verify: unknown bearer token')
        if (fake.mode.verify === 'hang') return // never answers: the caller's timeout must fire
        if (fake.mode.verify === '500') return send(res, 500, { name: 'INTERNAL_SERVICE_ERROR' })
        if (fake.mode.verify === '401') return send(res, 401, { error: 'invalid_token' })
        try {
          const parsed = JSON.parse(body.toString())
          if (parsed.webhook_id !== WEBHOOK_ID_B) fake.problems.push('verify: webhook_id')
        } catch {
          fake.problems.push('verify: body is not JSON')
        }
        return send(res, 200, { verification_status: fake.mode.verify })
      }
      send(res, 404, { name: 'NOT_FOUND' })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return fake
}

export const providerBEnv = (url: string, extra: Record<string, string> = {}) => ({
  PROVIDER_B_API_BASE: url,
  PROVIDER_B_CLIENT_ID: CLIENT_ID_B,
  PROVIDER_B_CLIENT_SECRET: CLIENT_SECRET_B,
  PROVIDER_B_WEBHOOK_ID: WEBHOOK_ID_B,
  ...extra,
})

export const headersB = (overrides: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'provider-b-transmission-id': randomBytes(8).toString('hex'),
  'provider-b-transmission-time': new Date().toISOString(),
  'provider-b-transmission-sig': `sig${randomBytes(24).toString('base64')}`,
  'provider-b-cert-url': 'https://api.provider-b.test/v1/notifications/certs/CERT-360caa42',
  'provider-b-auth-algo': 'SHA256withRSA',
  ...overrides,
})

export async function postB(app: App, payload: string, headers: Record<string, string> = headersB()) {
  return app.inject({ method: 'POST', url: '/billing/webhooks/provider-b', headers, payload })
}

export const providerAEnv = { PROVIDER_A_WEBHOOK_SECRET: SECRET_A }
