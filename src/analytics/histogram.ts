/**
 * The log-spaced histogram that lets percentiles of long ranges merge (docs/analytics.md).
 * Bucket 0 holds [0, 1 s); bucket k >= 1 holds [GAMMA^(k-1), GAMMA^k) seconds; the last bucket
 * also holds everything beyond. The database computes the bucket of a sample
 * (`metric_bucket()` in migration issue16_analytics_sql, the same constants); this module turns merged bucket
 * counts back into percentiles.
 *
 * Error bound: a percentile is reported as the geometric middle of the bucket its samples fall
 * in (interpolated like percentile_cont between the two samples around the rank), so it is
 * within a factor sqrt(GAMMA) of the exact value: under 2.5% relative for values of 1 s or more,
 * under 0.5 s below 1 s.
 */
export const GAMMA = 1.05
export const BUCKETS = 360

/** The value a sample in bucket `k` is reported as. */
export function bucketValue(k: number): number {
  if (k <= 0) return 0.5
  return GAMMA ** (k - 1) * Math.sqrt(GAMMA)
}

/** The bucket of `v` seconds (as metric_bucket() computes it in SQL). */
export function bucketOf(v: number): number {
  if (v < 1) return 0
  return Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(v) / Math.log(GAMMA)))
}

/**
 * Percentile `p` (0..1) with percentile_cont's definition (rank p*(n-1), linear between the two
 * samples around it) over samples known by bucket counts. `counts` maps bucket -> samples.
 */
export function histogramPercentile(counts: Map<number, number>, p: number): number | null {
  const buckets = [...counts.entries()].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0])
  const n = buckets.reduce((s, [, c]) => s + c, 0)
  if (n === 0) return null
  const rank = p * (n - 1)
  const lo = Math.floor(rank)
  const frac = rank - lo
  const valueAt = (i: number): number => {
    let seen = 0
    for (const [k, c] of buckets) {
      seen += c
      if (i < seen) return bucketValue(k)
    }
    return bucketValue(buckets[buckets.length - 1][0])
  }
  const a = valueAt(lo)
  return frac === 0 ? a : a + (valueAt(lo + 1) - a) * frac
}

/**
 * Adds to `acc` (bucket -> samples) every `"bucket": samples` pair of `text`: the agent dims'
 * `hist` objects as PostgreSQL writes them (`{"164": 1, "167": 2}`), concatenated in any nesting.
 * A year of 40 agents is ~2,300 such objects (1.5 MB at 1M conversations); JSON.parse made each one
 * an object with integer keys (dictionary elements) to walk once and drop: 3 ms and most of the
 * garbage of GET /analytics/agents. Read here straight off the text instead (docs/analytics.md,
 * "The histograms as text").
 */
export function addHistogramText(acc: Float64Array, text: string): void {
  const end = text.length
  let key = -1
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 34) {
      // "digits": a bucket (any other quoted text is not one and is skipped)
      let k = 0
      let digits = 0
      for (i++; i < end; i++) {
        const d = text.charCodeAt(i) - 48
        if (d < 0 || d > 9) break
        k = k * 10 + d
        digits++
      }
      while (i < end && text.charCodeAt(i) !== 34) i++
      key = digits > 0 && k < acc.length ? k : -1
    } else if (key >= 0 && (c === 45 || (c >= 48 && c <= 57))) {
      const negative = c === 45
      let v = 0
      for (i = negative ? i + 1 : i; i < end; i++) {
        const d = text.charCodeAt(i) - 48
        if (d < 0 || d > 9) break
        v = v * 10 + d
      }
      i--
      acc[key] += negative ? -v : v
      key = -1
    }
  }
}
