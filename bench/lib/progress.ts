/**
 * A progress bar on stderr with rate and ETA. On a terminal it redraws one line; otherwise (nohup,
 * CI logs) it prints a line every few seconds so the log stays readable.
 */
export class Progress {
  private done = 0
  private started = Date.now()
  private lastDraw = 0
  private readonly tty = Boolean(process.stderr.isTTY)

  constructor(
    private label: string,
    private total: number,
    private unit = 'rows',
  ) {
    this.draw(true)
  }

  tick(n = 1): void {
    this.done += n
    const now = Date.now()
    if (now - this.lastDraw >= (this.tty ? 200 : 5000)) this.draw()
  }

  set(done: number): void {
    this.done = done
    this.tick(0)
  }

  finish(extra = ''): number {
    this.done = Math.max(this.done, this.total)
    const secs = (Date.now() - this.started) / 1000
    const line = `${this.label}: ${fmtInt(this.total)} ${this.unit} in ${secs.toFixed(1)} s (${fmtInt(this.total / Math.max(secs, 0.001))}/s)${extra ? ' ' + extra : ''}`
    if (this.tty) process.stderr.write(`\r\x1b[K${line}\n`)
    else process.stderr.write(line + '\n')
    return secs
  }

  private draw(first = false): void {
    this.lastDraw = Date.now()
    const secs = (this.lastDraw - this.started) / 1000
    const frac = this.total > 0 ? Math.min(1, this.done / this.total) : 0
    const rate = secs > 0 ? this.done / secs : 0
    const eta = rate > 0 ? (this.total - this.done) / rate : NaN
    const width = 28
    const filled = Math.round(frac * width)
    const bar = '#'.repeat(filled) + '.'.repeat(width - filled)
    const line = `${this.label} [${bar}] ${(frac * 100).toFixed(1).padStart(5)}% ${fmtInt(this.done)}/${fmtInt(this.total)} ${this.unit} ${fmtInt(rate)}/s ETA ${fmtDuration(eta)}`
    if (this.tty) process.stderr.write(`\r\x1b[K${line}`)
    else if (!first) process.stderr.write(line + '\n')
  }
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

export function fmtDuration(secs: number): string {
  if (!Number.isFinite(secs)) return '--:--'
  const s = Math.max(0, Math.round(secs))
  const m = Math.floor(s / 60)
  return `${m}:${String(s % 60).padStart(2, '0')}`
}

/** Logs a harness step on stderr (stdout carries only the result table). */
export function step(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`)
}
