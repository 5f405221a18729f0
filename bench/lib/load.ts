import autocannon, { type RawRequest, type Result } from 'autocannon'
import { cpuMsOf, sampleRss } from './server.js'

export type ScenarioKind = 'read' | 'write' | 'ceiling'

export interface Scenario {
  id: string
  label: string
  kind: ScenarioKind
  method: 'GET' | 'POST'
  /** Path of the first request (and of every request unless `vary` changes it). */
  path: string
  headers?: Record<string, string>
  body?: string
  /** Makes each request distinct (another id, a new signed event); runs before every request. */
  vary?: (req: RawRequest) => RawRequest
  /**
   * A fixed word under /conversations (search, unread-count): while its route is missing,
   * GET /conversations/:id answers it with 404 CONVERSATION_NOT_FOUND.
   */
  fixedWord?: boolean
  /** Connections for this scenario instead of the run's (the single-client latency check). */
  connections?: number
  note?: string
}

export interface Measurement {
  id: string
  label: string
  kind: ScenarioKind
  status: 'ok' | 'n/a' | 'error'
  note?: string
  rps?: number
  p50?: number
  p90?: number
  p99?: number
  max?: number
  requests?: number
  non2xx?: number
  errors?: number
  statusCodes?: Record<string, number>
  /** Highest RSS of the server process during the measured run, MiB. */
  rssMb?: number
  /** CPU time of the server process (user + system) during the measured run ÷ its requests, ms. */
  cpuMsPerRequest?: number
  /** Size of one response body, bytes (from the probe). */
  bodyBytes?: number
}

export interface LoadOptions {
  connections: number
  duration: number
  warmup: number
}

export interface ProbeResult {
  status: number
  body: string
  json?: { code?: string; message?: string }
}

/** One request as the load run's first request would be, to see whether the route exists. */
export async function probe(baseUrl: string, s: Scenario): Promise<ProbeResult> {
  let req: RawRequest = { method: s.method, path: s.path, headers: { ...s.headers }, body: s.body }
  if (s.vary) req = s.vary(req)
  const res = await fetch(baseUrl + req.path, { method: req.method, headers: req.headers, body: req.body as string | undefined })
  const body = await res.text()
  let json
  try {
    json = JSON.parse(body)
  } catch {
    json = undefined
  }
  return { status: res.status, body, json }
}

/** 404 from the not-found handler (not a 404 the route itself answers, e.g. CONVERSATION_NOT_FOUND). */
export function isRouteMissing(p: ProbeResult): boolean {
  return p.status === 404 && p.json?.code === 'NOT_FOUND' && /^Route /.test(p.json?.message ?? '')
}

export function runCannon(baseUrl: string, s: Scenario, connections: number, duration: number): Promise<Result> {
  return Promise.resolve(
    autocannon({
      url: baseUrl,
      connections,
      pipelining: 1,
      duration,
      timeout: 10,
      requests: [
        {
          method: s.method,
          path: s.path,
          headers: s.headers,
          body: s.body,
          ...(s.vary ? { setupRequest: s.vary } : {}),
        },
      ],
    }),
  )
}

/**
 * Probes the route, then runs a warmup (discarded) and the measured run at a fixed duration,
 * sampling the server's RSS meanwhile.
 */
export async function measure(baseUrl: string, pid: number, s: Scenario, opts: LoadOptions): Promise<Measurement> {
  const base: Measurement = { id: s.id, label: s.label, kind: s.kind, status: 'ok', note: s.note }
  const p = await probe(baseUrl, s)
  if (isRouteMissing(p) || (s.fixedWord && p.status === 404 && p.json?.code === 'CONVERSATION_NOT_FOUND')) {
    return { ...base, status: 'n/a', note: 'n/a (route missing)' }
  }
  if (p.status < 200 || p.status >= 300) {
    const why = p.json?.code ? `${p.json.code}: ${p.json.message}` : p.body.slice(0, 120)
    return { ...base, status: 'error', note: `probe answered ${p.status} (${why})` }
  }
  const connections = s.connections ?? opts.connections
  if (opts.warmup > 0) await runCannon(baseUrl, s, connections, opts.warmup)
  const rss = sampleRss(pid)
  const cpu0 = cpuMsOf(pid)
  const r = await runCannon(baseUrl, s, connections, opts.duration)
  const cpu1 = cpuMsOf(pid)
  const statusCodes: Record<string, number> = {}
  for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = v.count
  return {
    ...base,
    rps: r.requests.average,
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    max: r.latency.max,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    statusCodes,
    rssMb: rss.stop(),
    cpuMsPerRequest: cpu0 !== undefined && cpu1 !== undefined && r.requests.total > 0 ? (cpu1 - cpu0) / r.requests.total : undefined,
    bodyBytes: Buffer.byteLength(p.body),
  }
}
