import { createHash } from 'node:crypto'
import type { AddressObject, HeaderValue, ParsedMail } from 'mailparser'
import { isAutomatic } from './auto.js'
import { stripQuoted } from './quoted.js'

/** A mail's address: e-mail lower-cased (an empty name when the display name is missing). */
export interface MailAddress {
  email: string
  name: string
}

export interface MailFile {
  filename: string | undefined
  contentType: string
  content: Buffer
}

/** What inbound needs of a mail (src/email/inbound.ts). Message-IDs are without their angle brackets. */
export interface InboundMail {
  messageId: string
  inReplyTo: string | null
  /** Oldest first. */
  references: string[]
  /** The sender Parley answers: Reply-To when present, else From; null when neither has an address. */
  sender: MailAddress | null
  from: MailAddress | null
  subject: string
  /** The text part, or the HTML part made into text; null when the mail has neither. */
  text: string | null
  /** `text` without the quoted history below the newest text. */
  body: string
  /** An auto-reply or a bounce (src/email/auto.ts): never starts a conversation. */
  automatic: boolean
  attachments: MailFile[]
}

/** mailparser could not read the mail: the same bytes would fail again. */
export class MailParseError extends Error {}

/** PostgreSQL text holds no NUL: a mail's strings lose theirs (and other C0 controls but tab and newlines). */
export const clean = (s: string) => s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')

/** `<a@b>` or `a@b` → `a@b`; one id per bracket pair, whitespace-separated otherwise. */
export function messageIds(value: string | string[] | undefined | null): string[] {
  if (!value) return []
  const all = Array.isArray(value) ? value.join(' ') : value
  const bracketed = [...all.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1]!)
  const ids = bracketed.length > 0 ? bracketed : all.split(/\s+/).filter((s) => s.includes('@'))
  return [...new Set(ids.map((s) => clean(s).trim()).filter((s) => s.length > 0 && s.length <= 998))]
}

function firstAddress(a: AddressObject | AddressObject[] | undefined): MailAddress | null {
  const list = Array.isArray(a) ? a : a ? [a] : []
  for (const obj of list) {
    for (const v of obj.value) {
      // A group ("undisclosed-recipients:;") nests its members.
      const inner = v.group?.length ? v.group : [v]
      for (const x of inner) if (x.address) return { email: clean(x.address).trim().toLowerCase(), name: clean(x.name ?? '').trim() }
    }
  }
  return null
}

export function headerText(v: HeaderValue | undefined): string {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v
  if (Array.isArray(v)) return v.map((x) => headerText(x as HeaderValue)).join(', ')
  if (typeof v === 'object' && 'value' in v && typeof v.value === 'string') return v.value
  if (typeof v === 'object' && 'text' in v && typeof v.text === 'string') return v.text
  return String(v)
}

/**
 * Parses a raw mail (mailparser). A mail without a Message-ID gets a stable one made from its
 * bytes (`<sha256>@parley.invalid`), so the same mail read twice is still stored once.
 */
export async function parseMail(raw: Buffer): Promise<InboundMail> {
  // mailparser is loaded when the first mail arrives (layer rule 10).
  const { simpleParser } = await import('mailparser')
  let m: ParsedMail
  try {
    m = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true })
  } catch (err) {
    throw new MailParseError((err as Error).message)
  }
  const from = firstAddress(m.from)
  const replyTo = firstAddress(m.replyTo)
  const text = m.text?.trim() ? clean(m.text) : null
  const messageId = messageIds(m.messageId)[0] ?? `${createHash('sha256').update(raw).digest('hex')}@parley.invalid`
  return {
    messageId,
    inReplyTo: messageIds(m.inReplyTo)[0] ?? null,
    references: messageIds(m.references),
    sender: replyTo ?? from,
    from,
    subject: clean(m.subject ?? '').replace(/\s+/g, ' ').trim(),
    text,
    body: text ? stripQuoted(text) : '',
    automatic: isAutomatic(m.headers, from),
    attachments: m.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
  }
}
