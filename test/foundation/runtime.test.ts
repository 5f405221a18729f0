import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import t from 'tap'

// The Docker image cannot be built on these machines (no Docker engine), so what can be checked
// by reading is checked here: the image runs a maintained Node.js LTS that every production
// dependency declares support for, and `engines` admits both that image and the Node this suite
// runs on (CI's).

const root = fileURLToPath(new URL('../..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as {
  engines: { node: string }
  dependencies: Record<string, string>
}
const dockerfile = readFileSync(`${root}/Dockerfile`, 'utf8')

/** Node.js release lines and the end of their support (https://nodejs.org/en/about/previous-releases). */
const END_OF_LIFE: Record<number, string> = { 20: '2026-04-30', 22: '2027-04-30', 24: '2028-04-30' }

t.test('the Docker image runs a maintained Node.js LTS', async (t) => {
  const images = [...dockerfile.matchAll(/^ARG NODE_IMAGE=(\S+)$/gm)].map((m) => m[1])
  t.equal(images.length, 1, 'one base image, declared once')
  const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])
  t.ok(froms.length >= 2, 'multi-stage build')
  t.ok(froms.every((f) => f === '${NODE_IMAGE}'), 'every stage uses it')
  const match = /^node:(\d+)-[a-z]+-slim$/.exec(images[0] ?? '')
  t.ok(match, `an official slim node image (${images[0]})`)
  const major = Number(match?.[1])
  t.equal(major % 2, 0, 'an LTS line (even major)')
  t.ok(END_OF_LIFE[major], `a known LTS line (${major})`)
  t.ok(Date.parse(END_OF_LIFE[major] ?? '1970-01-01') > Date.now(), `Node ${major} is still maintained (until ${END_OF_LIFE[major]})`)

  // Every production dependency that states an engine must accept the image's Node.
  for (const name of Object.keys(pkg.dependencies)) {
    const dep = JSON.parse(readFileSync(`${root}/node_modules/${name}/package.json`, 'utf8')) as { engines?: { node?: string } }
    const range = dep.engines?.node
    if (range) t.ok(semver.satisfies(`${major}.99.0`, range), `${name} (${range}) runs on Node ${major}`)
  }
  t.ok(semver.satisfies(`${major}.0.0`, pkg.engines.node), `engines (${pkg.engines.node}) admits the image's Node ${major}`)
})

t.test('engines states what the code needs and admits the Node CI runs', async (t) => {
  t.ok(semver.satisfies(process.version, pkg.engines.node), `engines admits ${process.version}`)
  // process.loadEnvFile (src/server.ts) arrived in 20.12: older Node must be refused.
  t.notOk(semver.satisfies('20.11.1', pkg.engines.node), 'Node 20.11 is refused (no process.loadEnvFile)')
  t.ok(semver.satisfies('20.12.0', pkg.engines.node))
  t.notOk(semver.satisfies('21.7.0', pkg.engines.node), 'odd, unsupported lines are not claimed')
})
