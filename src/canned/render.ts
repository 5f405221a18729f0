/**
 * The canned-response variables (API.md section 11): `{{name}}` or `{{name | "fallback"}}`, a
 * fixed set of names, filled in one left-to-right pass. Plain text in, plain text out: nothing is
 * evaluated, and a filled value is never scanned again (a visitor named "{{agent.name}}" stays
 * that text). An unknown name, or anything that is not exactly this syntax, is left as written.
 */

export const VARIABLES = ['visitor.name', 'visitor.email', 'agent.name', 'channel.name', 'conversation.id'] as const
export type Variable = (typeof VARIABLES)[number]
export type Values = Record<Variable, string | null | undefined>

const KNOWN = new Set<string>(VARIABLES)

/**
 * `{{`, optional spaces, a dotted name, optional spaces, then either `}}` or `|` spaces, a double
 * quoted fallback (backslash escapes `"` and `\`), spaces, `}}`. Bounded repetitions and no
 * nested quantifiers over the same characters: linear time on any input.
 */
const TOKEN = /\{\{ {0,8}([a-z]{1,20}\.[a-z]{1,20}) {0,8}(?:\| {0,8}"((?:[^"\\\n]|\\["\\]){0,200})" {0,8})?\}\}/g

export function renderTemplate(text: string, values: Values): { body: string; missing: string[] } {
  const missing: string[] = []
  const body = text.replace(TOKEN, (whole, name: string, fallback: string | undefined) => {
    if (!KNOWN.has(name)) return whole
    const value = values[name as Variable]
    if (value !== null && value !== undefined && value !== '') return value
    if (!missing.includes(name)) missing.push(name)
    return fallback === undefined ? '' : fallback.replace(/\\(["\\])/g, '$1')
  })
  return { body, missing }
}
