// The part of autocannon 9's API the harness uses (the package ships no types).
declare module 'autocannon' {
  interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    p50: number
    p90: number
    p97_5: number
    p99: number
    p99_9: number
    total: number
  }
  export interface RawRequest {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }
  export interface Result {
    requests: Histogram
    latency: Histogram
    throughput: Histogram
    errors: number
    timeouts: number
    non2xx: number
    mismatches: number
    duration: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
  }
  export interface Options {
    url: string
    connections?: number
    pipelining?: number
    duration?: number
    amount?: number
    timeout?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    requests?: {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      setupRequest?: (req: RawRequest, context: Record<string, unknown>) => RawRequest
    }[]
  }
  interface Instance extends PromiseLike<Result> {
    stop(): void
  }
  function autocannon(opts: Options): Instance
  export default autocannon
}
