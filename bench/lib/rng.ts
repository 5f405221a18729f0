/**
 * A small seeded PRNG (sfc32) so two runs with the same --seed write the same data set: ratios
 * then compare code, not luck. Math.random would be as fast but not reproducible.
 */
export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: number) {
    this.a = 0x9e3779b9
    this.b = 0x243f6a88
    this.c = 0xb7e15162
    this.d = seed >>> 0
    for (let i = 0; i < 15; i++) this.u32()
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return t >>> 0
  }

  /** [0, 1) */
  next(): number {
    return this.u32() / 4294967296
  }

  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]
  }

  hex8(): string {
    return this.u32().toString(16).padStart(8, '0')
  }

  /** UUIDv7 for a millisecond timestamp: ids sort like their creation time, as the API's do. */
  uuid7(ms: number): string {
    const t = Math.floor(ms).toString(16).padStart(12, '0')
    const r1 = this.hex8()
    const r2 = this.hex8()
    const r3 = this.hex8()
    const variant = (8 + (this.u32() & 3)).toString(16)
    return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r1.slice(0, 3)}-${variant}${r1.slice(3, 6)}-${r2}${r3.slice(0, 4)}`
  }

  /** Random (v4-shaped) UUID. */
  uuid4(): string {
    const r0 = this.hex8()
    const r1 = this.hex8()
    const r2 = this.hex8()
    const r3 = this.hex8()
    const variant = (8 + (this.u32() & 3)).toString(16)
    return `${r0}-${r1.slice(0, 4)}-4${r1.slice(4, 7)}-${variant}${r2.slice(0, 3)}-${r2.slice(3, 8)}${r3.slice(0, 7)}`
  }
}
