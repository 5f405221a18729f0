import { escapeHtml } from '../html.js'

/**
 * The `match` excerpt format: plain text, HTML-escaped (& < > " '), with each hit wrapped in
 * <mark>…</mark>. It is safe to insert as HTML; a client wanting text strips the two tags and
 * unescapes. ts_headline marks hits with two private-use characters (removed from the body
 * first), so no text of the message can forge a <mark>.
 */
export const START = '\uE000'
export const STOP = '\uE001'
export const MAX_EXCERPT = 300

export function highlight(headline: string): string {
  let text = headline.replace(/\s+/g, ' ').trim()
  if (text.length > MAX_EXCERPT) {
    text = text.slice(0, MAX_EXCERPT)
    // Do not leave a hit open, or cut a surrogate pair in half.
    if (/[\uD800-\uDBFF]$/.test(text)) text = text.slice(0, -1)
    if (text.lastIndexOf(START) > text.lastIndexOf(STOP)) text += STOP
    text += '…'
  }
  return escapeHtml(text).replaceAll(START, '<mark>').replaceAll(STOP, '</mark>')
}

const MARKERS = /[\uE000\uE001]/g

/** `text` without the two marker characters: only highlight() may place them. */
export function stripMarkers(text: string): string {
  return text.replace(MARKERS, '')
}

/**
 * A guest name / e-mail with the (case-insensitive) substring marked. Names and addresses are
 * anyone's text: the markers are stripped from them (and from the term) first, as from message
 * bodies, so a guest named "\uE000x\uE001" cannot forge a <mark>.
 */
export function highlightSubstring(rawValue: string, rawTerm: string): string {
  const value = stripMarkers(rawValue)
  const term = stripMarkers(rawTerm)
  if (!term) return highlight(value)
  const lower = value.toLowerCase()
  const t = term.toLowerCase()
  const at = lower.length === value.length && t.length === term.length ? lower.indexOf(t) : -1
  if (at < 0) return highlight(value)
  return highlight(value.slice(0, at) + START + value.slice(at, at + term.length) + STOP + value.slice(at + term.length))
}
