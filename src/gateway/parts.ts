import type { Server } from 'socket.io'
import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import type { Pool } from '../db/client.js'
import type { PresenceChange, PresenceWriter } from './presence.js'

/** The pieces every part of one gateway shares. */
export interface Parts {
  config: Config
  log: Log
  io: Server
  sql: Pool
  presence: PresenceWriter
  /** Broadcasts a presence transition to the member's workspace (null: nothing changed). */
  announce(change: PresenceChange | null): void
  /** Sends visitor:updated for `guestId` to its workspace's members (the visitor as the API shows it). */
  announceVisitor(workspaceId: string, guestId: string): void
  /** Set when the gateway is closing: sockets that drop then keep their presence until it expires. */
  closing: { value: boolean }
}

export const presenceFailed = (log: Log, err: Error) => log.warn({ err: { message: err.message } }, 'presence update failed')
