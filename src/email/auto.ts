import type { Headers } from 'mailparser'

type Value = Headers extends Map<string, infer V> ? V : never

const text = (v: Value | undefined): string => {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v
  if (typeof v === 'object' && 'value' in v && typeof v.value === 'string') return v.value
  return String(v)
}

/** Senders that are mail systems, not people (bounces). */
const SYSTEM_SENDER = /^(mailer-daemon|postmaster)@/i

/**
 * An auto-reply or a bounce (API.md section 19), which never starts a conversation, never joins
 * one and is never answered: `Auto-Submitted` other than `no` (RFC 3834), any `X-Autoreply` or
 * `X-Autorespond` (older responders), `Precedence: bulk | junk | list`, a `multipart/report`
 * (delivery and disposition reports, RFC 6522), or a MAILER-DAEMON (or postmaster) sender.
 * `headers` are mailparser's: names lower-cased.
 */
export function isAutomatic(headers: Headers, from: { email: string } | null): boolean {
  const auto = text(headers.get('auto-submitted')).trim().toLowerCase()
  if (auto !== '' && auto !== 'no') return true
  if (headers.has('x-autoreply') || headers.has('x-autorespond')) return true
  const precedence = text(headers.get('precedence')).trim().toLowerCase()
  if (precedence === 'bulk' || precedence === 'junk' || precedence === 'list') return true
  if (text(headers.get('content-type')).trim().toLowerCase() === 'multipart/report') return true
  if (from && SYSTEM_SENDER.test(from.email)) return true
  return false
}
