import { clientAddressKey } from '../client-address.js'
import { handshakeRateLimited, type HandshakeError } from '../errors.js'
import type { Parts } from './parts.js'

const MINUTE_MS = 60_000

/**
 * Visitor gateway connections (API.md section 2): VISITOR_CONNECTIONS_PER_MIN per guest, then
 * VISITOR_CONNECTIONS_PER_ADDRESS_PER_MIN per client address (IPv6 by its /64), counted after
 * authentication (a refused handshake uses up nothing) in the same windows as the HTTP limits
 * (`<limit>:<key>`, as plugins/rate-limit.ts names them), so every gateway shares them through
 * Redis and a Redis outage falls back to this process with the same numbers. As in the HTTP rows
 * with two keys, the guest's key is counted first. Returns the refusal, or null.
 */
export async function visitorConnectionRefusal(parts: Pick<Parts, 'config' | 'rateWindows'>, guestId: string, address: string): Promise<HandshakeError | null> {
  const { config, rateWindows } = parts
  const checks = [
    { key: `visitor-connections:g:${guestId}`, max: config.VISITOR_CONNECTIONS_PER_MIN },
    { key: `visitor-connections-address:${clientAddressKey(address)}`, max: config.VISITOR_CONNECTIONS_PER_ADDRESS_PER_MIN },
  ]
  for (const { key, max } of checks) {
    const { current, ttl } = await rateWindows.incr(key, MINUTE_MS)
    if (current > max) {
      const retryAfter = Math.max(1, Math.ceil(ttl / 1000))
      return handshakeRateLimited(retryAfter)
    }
  }
  return null
}
