import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { Config } from '../config.js'
import type { Sql } from '../db/client.js'
import { notConfigured } from '../errors.js'
import type { EmailSettings } from '../../schemas/channels.js'

/**
 * E-mail channels' passwords at rest (API.md section 19): AES-256-GCM under CHANNEL_SECRET_KEY
 * (32 bytes, base64), a fresh 12-byte IV per value, the channel id and the field name as
 * additional data (a ciphertext copied to another channel or field does not decrypt). Stored as
 * `v1.<iv>.<tag>.<ciphertext>`, each part base64url. A password never reaches a log or a response.
 */

export type SecretField = 'imap' | 'smtp'

/** CHANNEL_SECRET_KEY as a key: null when unset; exactly 32 bytes when set (checkConfig refuses anything else). */
export function channelSecretKey(config: Pick<Config, 'CHANNEL_SECRET_KEY'>): Buffer | null {
  if (!config.CHANNEL_SECRET_KEY) return null
  return Buffer.from(config.CHANNEL_SECRET_KEY.trim(), 'base64')
}

/** The key, or 503 NOT_CONFIGURED: e-mail channels need it. */
export function requireChannelSecretKey(config: Pick<Config, 'CHANNEL_SECRET_KEY'>): Buffer {
  const key = channelSecretKey(config)
  if (!key) throw notConfigured('E-mail channels need CHANNEL_SECRET_KEY (32 bytes, base64)')
  return key
}

const aad = (channelId: string, field: SecretField) => Buffer.from(`parley-channel:${channelId}:${field}`)

export function encryptSecret(key: Buffer, channelId: string, field: SecretField, plaintext: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(aad(channelId, field))
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.')
}

/** Throws when the value was not made by encryptSecret under this key for this channel and field. */
export function decryptSecret(key: Buffer, channelId: string, field: SecretField, stored: string): string {
  const [v, iv, tag, ct] = stored.split('.')
  if (v !== 'v1' || iv === undefined || tag === undefined || ct === undefined) throw new Error('unknown secret format')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
  decipher.setAAD(aad(channelId, field))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8')
}

/** An e-mail channel's full settings with the passwords in clear: for the IMAP and SMTP clients only. */
export interface ChannelMailSettings extends EmailSettings {
  channelId: string
  workspaceId: string
  /** The workspace's name (the From name's fallback). */
  workspaceName: string
  active: boolean
  imap: EmailSettings['imap'] & { password: string }
  smtp: EmailSettings['smtp'] & { password: string }
}

/**
 * The settings of e-mail channel `channelId` with its passwords decrypted (inbound reader,
 * outbound sender, the check route); null when it is not an e-mail channel. Throws 503
 * NOT_CONFIGURED without CHANNEL_SECRET_KEY, and an Error when a password does not decrypt
 * (another key): the caller records it as the channel's error.
 */
export async function channelMailSettings(
  sql: Sql,
  config: Pick<Config, 'CHANNEL_SECRET_KEY'>,
  channelId: string,
): Promise<ChannelMailSettings | null> {
  const [row] = await sql<
    { workspaceId: string; workspaceName: string; active: boolean; email: EmailSettings | null; imapPassword: string | null; smtpPassword: string | null }[]
  >`
    SELECT c.workspace_id AS "workspaceId", w.name AS "workspaceName", c.active, c.email,
           c.email_imap_password AS "imapPassword", c.email_smtp_password AS "smtpPassword"
    FROM channels c JOIN workspaces w ON w.id = c.workspace_id
    WHERE c.id = ${channelId} AND c.kind = 'email'`
  if (!row || !row.email) return null
  const key = requireChannelSecretKey(config)
  const open = (field: SecretField, stored: string | null) => (stored === null ? '' : decryptSecret(key, channelId, field, stored))
  return {
    ...row.email,
    channelId,
    workspaceId: row.workspaceId,
    workspaceName: row.workspaceName,
    active: row.active,
    imap: { ...row.email.imap, password: open('imap', row.imapPassword) },
    smtp: { ...row.email.smtp, password: open('smtp', row.smtpPassword) },
  }
}
