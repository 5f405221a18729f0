import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import t from 'tap'

// The Docker image cannot be built on these machines (no Docker engine), so what can be checked
// by reading is checked here: the image runs a maintained Node.js LTS that every production
// dependency declares support for, `engines` admits both that image and the Node this suite
// runs on, and that Node is the image's line (the devDependency `node`, first on PATH under npm
// scripts and .ci/run).

const root = fileURLToPath(new URL('../..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as {
  engines: { node: string }
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
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
  // pg-boss 12 declares >= 22.12 (file-type, cookie, content-disposition >= 22): Node 20 is refused.
  t.notOk(semver.satisfies('20.20.2', pkg.engines.node), 'Node 20 (end of life, below the dependencies) is refused')
  t.notOk(semver.satisfies('22.11.0', pkg.engines.node), 'Node 22 before 22.12 is refused (pg-boss)')
  t.ok(semver.satisfies('22.12.0', pkg.engines.node), 'a newcomer on Node 22 LTS is admitted')
  t.ok(semver.satisfies('24.0.0', pkg.engines.node), 'and one on Node 24 LTS')
  // Every production dependency's declared engine admits the lowest Node engines claims.
  const lowest = semver.minVersion(pkg.engines.node)!.version
  for (const name of Object.keys(pkg.dependencies)) {
    const dep = JSON.parse(readFileSync(`${root}/node_modules/${name}/package.json`, 'utf8')) as { engines?: { node?: string } }
    const range = dep.engines?.node
    if (range) t.ok(semver.satisfies(lowest, range), `${name} (${range}) runs on ${lowest}, the lowest engines admits`)
  }
})

t.test("the suite runs on the Docker image's Node line, pinned for CI", async (t) => {
  const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile)
  const imageMajor = Number(image?.[1])
  const pinned = pkg.devDependencies.node
  t.ok(pinned, 'the devDependency `node` pins the Node the tests run on')
  t.equal(semver.minVersion(pinned)!.major, imageMajor, `its line (${pinned}) is the image's (node:${imageMajor})`)
  const installed = JSON.parse(readFileSync(`${root}/node_modules/node/package.json`, 'utf8')) as { version: string }
  t.ok(semver.satisfies(installed.version, pinned), `installed: ${installed.version}`)
  // npm test / npx tap put node_modules/.bin (its `node`) first on PATH, .ci/run node_modules/node/bin.
  t.equal(process.versions.node, installed.version, `this suite runs on it (${process.execPath})`)
})
