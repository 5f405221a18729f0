import { randomBytes } from 'node:crypto'

/**
 * The reference token of an e-mail conversation (`conversations.email_ref`), written `[#<ref>]`
 * at the end of every outgoing subject so a reply that lost its headers still threads (API.md
 * section 19; inbound also requires the sender to be the conversation's guest). 10 characters of
 * lower-case Crockford base32 (no i, l, o, u): 50 random bits, short enough for a subject,
 * unguessable enough with the guest check; unique per channel (conv_email_ref_uq).
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
export const EMAIL_REF_LENGTH = 10

export function newEmailRef(): string {
  const bytes = randomBytes(EMAIL_REF_LENGTH)
  let out = ''
  for (const b of bytes) out += ALPHABET[b & 31]
  return out
}

/** `[#ref]` as it appears in a subject (matched case-insensitively). */
export const REF_PATTERN = /\[#([0-9a-hjkmnp-tv-z]{10})\]/i

/** The ref a subject carries (lower-cased), or null. */
export function refOfSubject(subject: string): string | null {
  const m = REF_PATTERN.exec(subject)
  return m ? m[1]!.toLowerCase() : null
}
