import { parse } from 'csv-parse/sync'
import t from 'tap'
import { CSV_COLUMNS } from '../../src/analytics/export.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { steps } from './fixtures.js'

// API.md section 15: a cell holding a line break, a quote or a comma is quoted, so a parser reads
// the rows and columns that were written; cells starting with = + - @, a tab or a carriage
// return get a leading '. Read back with a real CSV parser that, like spreadsheets, also ends
// a row at a lone \n or \r.

const FORMULA = /^[=+\-@\t\r]/
const guarded = (text: string) => (FORMULA.test(text) ? `'${text}` : text)

t.test('conversations.csv: hostile names cannot add rows, columns or formulas', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const s = steps(app)
  const channel = 'Desk\n=HYPERLINK("http://x.example")'
  const agent = 'Agnes\r-1+1'
  await app.deps.sql`UPDATE channels SET name = ${channel} WHERE id = ${ws.channelId}`
  await app.deps.sql`UPDATE members SET name = ${agent} WHERE workspace_id = ${ws.workspaceId} AND user_id = ${ws.agent.userId}`

  const names = [
    'Eve\n=1+2', // the reported one: a lone \n, nothing else csv-stringify quotes for
    'Mallory\r+SUM(A1)', // a lone \r
    'Trent\r\n@cmd', // a whole CRLF
    '\t=2+3', // leading tab
    '\r-4+5', // leading carriage return
    '@SUM(1)',
    'Plain, with comma',
    'Quote "q" inside',
    'Peggy',
  ]
  const expected = new Map<string, string>()
  for (const name of names) {
    const g = await seedGuest(app, ws, name)
    const conv = await s.start(g)
    await s.assign(conv.id, ws.owner, ws.agent.userId)
    expected.set(conv.id, name)
  }

  const now = Date.now()
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`
  const res = await app.inject({ url: `/analytics/conversations.csv?${range}`, headers: ws.owner.headers })
  t.equal(res.statusCode, 200)

  const rows: string[][] = parse(res.body, { record_delimiter: ['\r\n', '\n', '\r'], relax_column_count: true, skip_empty_lines: false })
  t.same(rows[0], [...CSV_COLUMNS], 'header')
  const data = rows.slice(1)
  t.equal(data.length, names.length, 'one row per conversation, no row split by a line break')
  for (const row of data) {
    t.equal(row.length, CSV_COLUMNS.length, `row ${row[0]}: ${CSV_COLUMNS.length} columns`)
    const name = expected.get(row[0]!)
    t.ok(name !== undefined, `row starts with a conversation id (${JSON.stringify(row[0])})`)
    t.equal(row[2], guarded(name ?? ''), `guestName read back as written (${JSON.stringify(name)})`)
    t.equal(row[1], guarded(channel), 'channel name read back as written')
    t.equal(row[3], guarded(agent), 'agent name read back as written')
    for (const cell of row) t.notOk(FORMULA.test(cell), `no cell starts a formula: ${JSON.stringify(cell)}`)
  }
})
