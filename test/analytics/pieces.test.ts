import fc from 'fast-check'
import t from 'tap'
import { decompose } from '../../src/analytics/pieces.js'
import { addHistogramText, bucketOf, bucketValue, BUCKETS, GAMMA, histogramPercentile } from '../../src/analytics/histogram.js'

/** The pure parts of analytics: range decomposition and the histogram's error bound. */

const HOUR = 3_600_000
const span = (p: ReturnType<typeof decompose>[number]): [number, number] => {
  if (p.raw) return [Date.parse(p.lo), Date.parse(p.hi)]
  const s = Date.parse(p.start)
  const d = new Date(s)
  const end =
    p.grain === 'h' ? s + HOUR
    : p.grain === 'd' ? s + 24 * HOUR
    : p.grain === 'm' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
    : d.getUTCDate() === 21 ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) : s + 240 * HOUR
  return [s, end]
}

t.test('decompose covers the range exactly, in order, with few pieces', async (t) => {
  const instant = fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2027, 0, 1) })
  fc.assert(
    fc.property(instant, fc.integer({ min: 1, max: 366 * 24 * HOUR }), fc.boolean(), (lo, len, hours) => {
      const hi = lo + len
      const pieces = decompose(lo, hi, hours)
      let at = lo
      for (const p of pieces) {
        const [s, e] = span(p)
        if (s !== at || e <= s) return false
        if (!hours && !p.raw && p.grain === 'h') return false
        if (p.raw && e - s > (hours ? HOUR : 24 * HOUR)) return false
        at = e
      }
      const rollups = pieces.filter((p) => !p.raw).length
      return at === hi && rollups <= 12 + 4 + 18 + (hours ? 46 : 0) + 1 && pieces.filter((p) => p.raw).length <= 2
    }),
    { numRuns: 2000 },
  )
  t.same(
    decompose(Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1)).map((p) => (p.raw ? 'raw' : p.grain)),
    Array(12).fill('m'),
    'a calendar year is twelve months',
  )
  t.same(
    decompose(Date.UTC(2026, 1, 3, 4, 30), Date.UTC(2026, 1, 22, 1)).map((p) => (p.raw ? 'raw' : `${p.grain}${p.start.slice(8, 13)}`)),
    ['raw', ...Array.from({ length: 19 }, (_, i) => `h03T${String(5 + i).padStart(2, '0')}`), ...'04 05 06 07 08 09 10'.split(' ').map((d) => `d${d}T00`), 't11T00', 'd21T00', 'h22T00'],
  )
})

t.test('histogram percentiles stay within the stated bound of percentile_cont', async (t) => {
  t.equal(bucketOf(0.2), 0)
  t.equal(bucketOf(1), 1)
  t.equal(bucketOf(1.05), 2)
  t.equal(bucketOf(1e12), 359)
  fc.assert(
    fc.property(fc.array(fc.double({ min: 1, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 300 }), fc.constantFrom(0.5, 0.9), (xs, p) => {
      const sorted = [...xs].sort((a, b) => a - b)
      const r = p * (sorted.length - 1)
      const lo = Math.floor(r)
      const exact = lo + 1 < sorted.length ? sorted[lo] + (sorted[lo + 1] - sorted[lo]) * (r - lo) : sorted[lo]
      const counts = new Map<number, number>()
      for (const x of xs) counts.set(bucketOf(x), (counts.get(bucketOf(x)) ?? 0) + 1)
      const est = histogramPercentile(counts, p)!
      return Math.abs(est - exact) / exact <= Math.sqrt(GAMMA) - 1 + 1e-9
    }),
    { numRuns: 3000 },
  )
  t.equal(histogramPercentile(new Map(), 0.5), null)
  t.equal(bucketValue(0), 0.5)
})

t.test('addHistogramText sums every bucket of concatenated hist texts as JSON.parse would', async (t) => {
  const histogram = fc.dictionary(fc.integer({ min: 0, max: BUCKETS - 1 }).map(String), fc.integer({ min: 1, max: 2 ** 40 }), { maxKeys: 60 })
  fc.assert(
    fc.property(fc.array(fc.tuple(histogram, fc.boolean()), { maxLength: 8 }), (hists) => {
      // PostgreSQL's two spellings: jsonb's `{"3": 1, "7": 2}` and json_object_agg's `{ "3" : 1, "7" : 2 }`
      const texts = hists.map(([h, jsonb]) =>
        jsonb
          ? `{${Object.entries(h).map(([k, v]) => `"${k}": ${v}`).join(', ')}}`
          : `{ ${Object.entries(h).map(([k, v]) => `"${k}" : ${v}`).join(', ')} }`,
      )
      const expected = new Float64Array(BUCKETS)
      for (const text of texts) for (const [k, v] of Object.entries(JSON.parse(text) as Record<string, number>)) expected[Number(k)] += v
      const acc = new Float64Array(BUCKETS)
      addHistogramText(acc, texts.join(''))
      return acc.every((v, k) => v === expected[k])
    }),
    { numRuns: 300 },
  )
  const acc = new Float64Array(BUCKETS)
  addHistogramText(acc, '{"3": 2}{"3": -1, "999": 4, "x": 5}')
  t.equal(acc[3], 1, 'a negative count subtracts')
  t.equal(acc.reduce((a, b) => a + b, 0), 1, 'a bucket past the last and a key that is not a number are skipped')
})
