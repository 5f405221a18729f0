import type { Measurement } from './load.js'

export interface Target {
  name: string
  value: number | undefined
  op: '>=' | '<=' | '<'
  limit: number
  unit?: string
  detail?: string
  result: 'PASS' | 'FAIL' | 'n/a'
}

export function target(name: string, value: number | undefined, op: Target['op'], limit: number, unit = '', detail?: string): Target {
  let result: Target['result'] = 'n/a'
  if (value !== undefined && Number.isFinite(value)) {
    const ok = op === '>=' ? value >= limit : op === '<=' ? value <= limit : value < limit
    result = ok ? 'PASS' : 'FAIL'
  }
  return { name, value, op, limit, unit, detail, result }
}

function fmt(n: number | undefined, digits = 0): string {
  if (n === undefined || !Number.isFinite(n)) return '-'
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

function table(header: string[], rows: string[][], alignLeft: number[] = [0]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells.map((c, i) => (alignLeft.includes(i) ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

export function scenarioTable(ms: Measurement[]): string {
  const rows = ms.map((m) => {
    if (m.status !== 'ok') return [m.label, '', '', '', '', '', '', '', m.note ?? m.status]
    const bad = (m.non2xx ?? 0) + (m.errors ?? 0)
    return [
      m.label,
      fmt(m.rps),
      fmt(m.p50),
      fmt(m.p90),
      fmt(m.p99),
      bad ? fmt(bad) : '0',
      fmt(m.rssMb),
      fmt(m.bodyBytes),
      m.note ?? '',
    ]
  })
  return table(['scenario', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'non-2xx+err', 'RSS MiB', 'body B', 'note'], rows, [0, 8])
}

export function targetTable(ts: Target[]): string {
  const rows = ts.map((t) => [
    t.name,
    t.value === undefined || !Number.isFinite(t.value) ? '-' : `${fmt(t.value, t.value < 10 ? 2 : 0)}${t.unit ?? ''}`,
    `${t.op} ${t.limit}${t.unit ?? ''}`,
    t.result,
    t.detail ?? '',
  ])
  return table(['target', 'measured', 'goal', 'result', 'detail'], rows, [0, 4])
}
