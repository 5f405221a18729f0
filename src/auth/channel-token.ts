import { createHash, timingSafeEqual } from 'node:crypto'
import { invalidChannelToken } from '../errors.js'

/** Equal-time comparison of two strings of any length (hashing first hides the length too). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest()
  const hb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ha, hb)
}

/**
 * A channel that requires its token admits only a request carrying that token in
 * `x-channel-token` (API.md sections 4 and 14): 401 INVALID_CHANNEL_TOKEN otherwise. The one
 * place POST /auth and GET /support/widget/:channelId check it.
 */
export function checkChannelToken(channel: { requireChannelToken: boolean; channelToken: string }, given: string | undefined): void {
  if (channel.requireChannelToken && (!given || !safeEqual(given, channel.channelToken))) {
    throw invalidChannelToken()
  }
}
