/**
 * Reads a V8 .cpuprofile (from `npm run bench -- --cpu-prof`) and prints where the API spent its
 * CPU: self time by layer (our code, each dependency, Node internals, GC, idle) and the top
 * functions. The same file opens as a flame graph in Chrome DevTools (Performance panel) or
 * https://www.speedscope.app.
 *
 *   node --import tsx bench/profile-summary.ts bench/results/cpu-<stamp>/<file>.cpuprofile [top]
 */
import { readFileSync } from 'node:fs'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

const [file, topArg] = process.argv.slice(2)
if (!file) {
  console.error('usage: profile-summary.ts <file.cpuprofile> [top]')
  process.exit(2)
}
const top = Number(topArg ?? 25)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const selfUs = new Map<number, number>()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
}

function layer(n: Node): string {
  const url = n.callFrame.url
  const fn = n.callFrame.functionName
  if (fn === '(idle)') return '(idle)'
  if (fn === '(garbage collector)') return '(gc)'
  if (fn === '(program)') return '(program: native, not attributed)'
  if (!url) return `(native) ${fn || 'anonymous'}`
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (m) return m[1]
  if (url.startsWith('node:')) return 'node internals'
  const own = /\/(dist\/)?(src|plugins|routes|schemas|bench)\//.exec(url)
  if (own) return `parley ${own[2]}/`
  return url
}

const total = [...selfUs.values()].reduce((a, b) => a + b, 0)
const layers = new Map<string, number>()
const funcs = new Map<string, number>()
for (const [id, us] of selfUs) {
  const n = byId.get(id)!
  const l = layer(n)
  layers.set(l, (layers.get(l) ?? 0) + us)
  const name = `${n.callFrame.functionName || '(anonymous)'}  ${n.callFrame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/)?/, '')}:${n.callFrame.lineNumber + 1}`
  funcs.set(name, (funcs.get(name) ?? 0) + us)
}
const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)}%`
const busy = total - (layers.get('(idle)') ?? 0)
console.log(`${file}\nsampled ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s\n\nself time by layer:`)
for (const [l, us] of [...layers].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${pct(us)}  ${l}`)
console.log(`\ntop ${top} functions by self time:`)
for (const [f, us] of [...funcs].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${f}`)
