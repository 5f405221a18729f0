// `npm run build`: writes the bundles where the compiled server reads them (dist/widget/).
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildDemoAgent, buildWidget } from '../src/widget/bundle.js'

const dir = join(process.argv[2] ?? 'dist', 'widget')
await mkdir(dir, { recursive: true })
for (const [name, build] of [['widget.js', buildWidget], ['demo-agent.js', buildDemoAgent]] as const) {
  const code = await build()
  await writeFile(join(dir, name), code)
  console.log(`${join(dir, name)}: ${code.length} bytes`)
}
