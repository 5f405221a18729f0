import type { EmailChannelView, EmailCreateInput, EmailPatchInput, EmailSettings } from '../../schemas/channels.js'
import type { channels } from '../db/schema.js'
import { iso } from '../time.js'

export type { EmailSettings }

/** The mailbox read when the settings name none. */
export const DEFAULT_MAILBOX = 'INBOX'

/** The columns of an e-mail channel's settings and status (src/channels/channels.ts selects them). */
export type EmailColumns = Pick<typeof channels.$inferSelect, 'email' | 'emailState' | 'emailError' | 'emailLastSyncAt'>

/** What channels.email stores for a new e-mail channel (the passwords go to their encrypted columns). */
export function storedOf(input: EmailCreateInput): EmailSettings {
  return {
    address: input.address.toLowerCase(),
    fromName: input.fromName ?? null,
    imap: { host: input.imap.host, port: input.imap.port, secure: input.imap.secure, username: input.imap.username, mailbox: input.imap.mailbox ?? DEFAULT_MAILBOX },
    smtp: { host: input.smtp.host, port: input.smtp.port, secure: input.smtp.secure, username: input.smtp.username },
  }
}

/** A PATCH applied to the stored settings: the fields named replace, the others stay (passwords apart). */
export function patchedOf(stored: EmailSettings, patch: EmailPatchInput): EmailSettings {
  const { password: _i, ...imap } = patch.imap ?? {}
  const { password: _s, ...smtp } = patch.smtp ?? {}
  return {
    address: patch.address === undefined ? stored.address : patch.address.toLowerCase(),
    fromName: patch.fromName === undefined ? stored.fromName : patch.fromName,
    imap: { ...stored.imap, ...imap },
    smtp: { ...stored.smtp, ...smtp },
  }
}

/** A channel's `email` in a response: passwords null, the status from its columns. */
export function emailView(row: EmailColumns): EmailChannelView | undefined {
  const s = row.email as EmailSettings | null
  if (!s) return undefined
  return {
    address: s.address,
    fromName: s.fromName,
    imap: { ...s.imap, password: null },
    smtp: { ...s.smtp, password: null },
    status: { state: row.emailState ?? 'ok', error: row.emailError, lastSyncAt: iso(row.emailLastSyncAt) },
  }
}
