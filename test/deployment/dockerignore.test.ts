import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import dockerignore from '@balena/dockerignore'
import t, { type Test } from 'tap'

// The Docker build context must not carry a machine's local state or secrets (.env files, the
// embedded database and generated secrets in .parley/, uploads in data/), and must carry what the
// Dockerfile copies. Docker's own matching rules (a port of moby's) judge .dockerignore; git
// judges .gitignore. No Docker engine is needed.
const root = new URL('../..', import.meta.url).pathname
// A CommonJS module: its function is also its `default` (what TypeScript sees from ESM).
const docker = dockerignore.default().add(readFileSync(`${root}.dockerignore`, 'utf8'))

/** The paths of `paths` that git ignores under the repository's .gitignore. */
function gitIgnored(t: Test, paths: string[]): Set<string> {
  const r = spawnSync('git', ['check-ignore', '--no-index', '--stdin'], { cwd: root, input: paths.join('\n'), encoding: 'utf8' })
  t.ok(r.status === 0 || r.status === 1, `git check-ignore ran: ${r.stderr}`)
  return new Set(r.stdout.split('\n').filter(Boolean))
}

// What a working checkout holds that no commit does: state and secrets of this machine.
const LOCAL_STATE = [
  '.env',
  '.env.local',
  '.env.production',
  '.parley/secrets.json',
  '.parley/pg-password',
  '.parley/pg/PG_VERSION',
  'data/uploads/ab/cd/0b9e.bin',
  '.tap/processinfo/run.json',
  'scratch/notes.md',
  'bench/results/2026-01-01.json',
  'node_modules/pg-boss/package.json',
  'dist/src/server.js',
  'npm-debug.log',
]

t.test('local state and secrets are kept out of git and out of the build context', async (t) => {
  const ignoredByGit = gitIgnored(t, LOCAL_STATE)
  for (const path of LOCAL_STATE) {
    t.ok(ignoredByGit.has(path), `git ignores ${path}`)
    t.ok(docker.ignores(path), `.dockerignore excludes ${path}`)
  }
  t.notOk(gitIgnored(t, ['.env.example']).has('.env.example'), '.env.example (no secrets) stays in git')
})

t.test('whatever git ignores in this checkout, the build context ignores too', async (t) => {
  // This checkout's own untracked, ignored files (node_modules, .tap, .parley after a start...).
  const r = spawnSync('git', ['ls-files', '-z', '--others', '--ignored', '--exclude-standard'], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  t.equal(r.status, 0, r.stderr)
  const present = r.stdout.split('\0').filter(Boolean)
  const leaked = present.filter((p) => !docker.ignores(p))
  t.same(leaked.slice(0, 10), [], `${present.length} ignored files here, none in the build context`)
})

t.test('every tracked file the Dockerfile copies is in the build context', async (t) => {
  const dockerfile = readFileSync(`${root}Dockerfile`, 'utf8')
  // COPY from the context (not --from=stage): every argument but the last is a source.
  const sources = [...dockerfile.matchAll(/^COPY (?!--from)(?:--\S+ )*(.+)$/gm)].flatMap((m) => m[1].trim().split(/\s+/).slice(0, -1))
  t.ok(sources.includes('package.json') && sources.includes('src'), `sources read: ${sources.join(' ')}`)
  const tracked = spawnSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).stdout.split('\0').filter(Boolean)
  for (const source of sources) {
    const files = tracked.filter((f) => f === source || f.startsWith(`${source.replace(/\/$/, '')}/`))
    t.ok(files.length > 0, `${source} is in the repository`)
    const excluded = files.filter((f) => docker.ignores(f))
    t.same(excluded, [], `${source}: all ${files.length} files reach the build`)
  }
})
