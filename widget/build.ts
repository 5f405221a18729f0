// `npm run build`: writes the widget bundle where the compiled server reads it (dist/widget/widget.js).
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { buildWidget } from '../src/widget/bundle.js'

const out = join(process.argv[2] ?? 'dist', 'widget', 'widget.js')
await mkdir(dirname(out), { recursive: true })
const code = await buildWidget()
await writeFile(out, code)
console.log(`${out}: ${code.length} bytes`)
