import t from 'tap'
import { renderTemplate, type Values } from '../../src/canned/render.js'

const values: Values = {
  'visitor.name': 'Gina',
  'visitor.email': '',
  'agent.name': 'Agnes',
  'channel.name': 'Website',
  'conversation.id': '0190-abc',
}

t.test('fills known variables, with and without spaces', async (t) => {
  t.same(renderTemplate('Hi {{visitor.name}}, {{ agent.name }} here ({{channel.name}}, #{{conversation.id}})', values), {
    body: 'Hi Gina, Agnes here (Website, #0190-abc)',
    missing: [],
  })
})

t.test('a known variable without a value renders its fallback, or nothing, and is named once in missing', async (t) => {
  t.same(renderTemplate('Mail: {{visitor.email | "none given"}}; again: {{visitor.email}}.', values), {
    body: 'Mail: none given; again: .',
    missing: ['visitor.email'],
  })
  t.same(renderTemplate('Hi {{visitor.name | "there"}}', { ...values, 'visitor.name': null }).body, 'Hi there')
  t.same(renderTemplate('{{visitor.email|"say \\"hi\\" \\\\o/"}}', values).body, 'say "hi" \\o/')
})

t.test('unknown variables and anything that is not the syntax stay as written', async (t) => {
  const text = '{{visitor.phone}} {{ visitor.phone | "x" }} {{visitor.name | there}} {{visitor}} {visitor.name} {{constructor.name}} {{__proto__.x}}'
  t.same(renderTemplate(text, values), { body: text, missing: [] })
})

t.test('a filled value is never expanded again, and nothing is evaluated', async (t) => {
  const hostile = { ...values, 'visitor.name': '{{agent.name}} ${process.exit()} <b>' }
  t.same(renderTemplate('Hi {{visitor.name}}', hostile).body, 'Hi {{agent.name}} ${process.exit()} <b>')
})
