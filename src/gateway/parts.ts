import type { Server } from 'socket.io'
import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import type { Pool } from '../db/client.js'
import type { PresenceChange, PresenceWriter } from './presence.js'
import type { RateWindows } from '../rate-windows.js'
import type { VisitorAnnouncer } from './visitor-announcer.js'

/** The pieces every part of one gateway shares. */
export interface Parts {
  config: Config
  log: Log
  io: Server
  sql: Pool
  presence: PresenceWriter
  /** Broadcasts a presence transition to the member's workspace (null: nothing changed). */
  announce(change: PresenceChange | null): void
  /** visitor:updated for the workspace's members (the visitor as the API shows it), debounced. */
  visitors: VisitorAnnouncer
  /** The time windows of the abuse limits (visitor connections), shared with the API through Redis. */
  rateWindows: RateWindows
  /** The client address of a handshake, by the API's rule (TRUST_PROXY). */
  clientAddress(req: import('node:http').IncomingMessage): string
  /** Set when the gateway is closing: sockets that drop then keep their presence until it expires. */
  closing: { value: boolean }
}

export const presenceFailed = (log: Log, err: Error) => log.warn({ err: { message: err.message } }, 'presence update failed')
