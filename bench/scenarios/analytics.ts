import type { Area, AreaScenario } from '../lib/area.js'
import { ratio, resultOf } from '../lib/area.js'
import type { Measurement } from '../lib/load.js'
import { fmtInt, step } from '../lib/progress.js'
import { target } from '../lib/report.js'
import { memoryOf } from '../lib/server.js'

/**
 * /analytics: `summary` over a year (366 UTC days ending tomorrow, bare dates) in the largest and
 * in the 10,000-conversation workspace from one connection, the same over a year ending now (raw
 * partial hours at both ends) and in a DST zone, and the CSV export of the largest workspace's
 * year: rows per second and the API's peak RSS while it streams.
 */
const DAY = 86_400_000

export const analytics: Area = {
  name: 'analytics',
  ids: [
    { id: 'analytics-summary-large-1c', about: '`GET /analytics/summary` over a year (bare UTC dates) in the largest workspace, 1 connection' },
    { id: 'analytics-summary-small-1c', about: 'the same in the 10,000-conversation workspace' },
    { id: 'analytics-summary-now-1c', about: 'a year ending now (ms instants: raw partial hours at both ends), largest workspace, 1 connection' },
    { id: 'analytics-summary-tz-1c', about: 'a year of local dates in America/New_York (DST), largest workspace, 1 connection' },
    { id: 'analytics-agents-1c', about: '`GET /analytics/agents` over the year, largest workspace (40 agents), 1 connection' },
    { id: 'analytics-csv', about: '`GET /analytics/conversations.csv` of the largest workspace\'s year, once: rows/s and peak RSS' },
  ],
  async prepare(run, wanted) {
    const { api, headers, seed } = run
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
    const now = Date.now()
    const year = `from=${day(now - 365 * DAY)}&to=${day(now + DAY)}`
    const yearNow = `from=${new Date(now - 365 * DAY).toISOString()}&to=${new Date(now).toISOString()}`
    const get = (id: string, label: string, path: string, h: Record<string, string>): AreaScenario => ({
      id,
      label,
      kind: 'read',
      method: 'GET',
      path,
      headers: h,
      connections: 1,
      note: 'single client: latency without queueing',
    })
    const csv: AreaScenario = {
      id: 'analytics-csv',
      label: `GET /analytics/conversations.csv (year, ${fmtInt(seed.largest.size)} conv. workspace)`,
      kind: 'read',
      method: 'GET',
      path: `/analytics/conversations.csv?${year}`,
      headers: headers.largest,
      measure: () => measureCsv(api.url, api.pid, `/analytics/conversations.csv?${year}`, headers.largest),
    }
    let csvResult: { rows: number; seconds: number; rowsPerSecond: number; bytes: number; peakRssMb: number; rssBeforeMb: number } | undefined
    async function measureCsv(base: string, pid: number, path: string, h: Record<string, string>): Promise<Measurement> {
      step('streaming the CSV export once')
      const before = memoryOf(pid)?.rss ?? 0
      let max = before
      const timer = setInterval(() => {
        const m = memoryOf(pid)
        if (m && m.rss > max) max = m.rss
      }, 50)
      const t0 = performance.now()
      const res = await fetch(`${base}${path}`, { headers: h })
      let rows = -1 // the header line
      let bytes = 0
      const reader = res.body!.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        bytes += value.length
        for (const b of value) if (b === 10) rows++
      }
      const seconds = (performance.now() - t0) / 1000
      clearInterval(timer)
      csvResult = { rows, seconds, rowsPerSecond: rows / seconds, bytes, peakRssMb: max, rssBeforeMb: before }
      return {
        id: 'analytics-csv',
        label: csv.label,
        kind: 'read',
        status: res.status === 200 ? 'ok' : 'error',
        note: `${fmtInt(rows)} rows in ${seconds.toFixed(1)} s = ${fmtInt(rows / seconds)} rows/s; ${(bytes / 2 ** 20).toFixed(1)} MiB; API RSS ${before.toFixed(0)} -> peak ${max.toFixed(0)} MiB`,
        requests: 1,
        rssMb: max,
        statusCodes: { [res.status]: 1 },
      }
    }
    void wanted
    return {
      scenarios: [
        get('analytics-summary-large-1c', `GET /analytics/summary year (${fmtInt(seed.largest.size)} conv.)`, `/analytics/summary?${year}`, headers.largest),
        get('analytics-summary-small-1c', `GET /analytics/summary year (${fmtInt(seed.small.size)} conv.)`, `/analytics/summary?${year}`, headers.small),
        get('analytics-summary-now-1c', 'GET /analytics/summary year ending now (largest)', `/analytics/summary?${yearNow}`, headers.largest),
        get('analytics-summary-tz-1c', 'GET /analytics/summary year, America/New_York (largest)', `/analytics/summary?${year}&timezone=America/New_York`, headers.largest),
        get('analytics-agents-1c', 'GET /analytics/agents year (largest)', `/analytics/agents?${year}`, headers.largest),
        csv,
      ],
      targets: (results) => {
        const large = resultOf(results, 'analytics-summary-large-1c')
        const small = resultOf(results, 'analytics-summary-small-1c')
        return [
          target(`analytics summary (year) p50 at 1 connection, ${fmtInt(seed.largest.size)} conv.`, large?.p50, '<', 50, ' ms'),
          // Issue 31: the per-agent report over a year (40 agents' rollups and histograms).
          target(`analytics agents (year) p50 at 1 connection, ${fmtInt(seed.largest.size)} conv.`, resultOf(results, 'analytics-agents-1c')?.p50, '<', 20, ' ms'),
          target(
            `analytics summary p50 ${fmtInt(seed.largest.size)} conv. ÷ ${fmtInt(seed.small.size)} conv.`,
            ratio(large?.p50, small?.p50),
            '<=',
            2,
          ),
        ]
      },
      report: async () => ({ data: { analyticsCsv: csvResult, analyticsRange: year } }),
    }
  },
}
