import { Emitter } from '@socket.io/redis-emitter'
import type { RedisClient } from './redis.js'
import type { Server } from 'socket.io'
import type { Log } from './logger.js'

/**
 * Real-time events, published by domain code through `ctx.events` (EventPublisher). Two
 * implementations, chosen at start (src/mode.ts): the API publishes through Redis with
 * @socket.io/redis-emitter and the gateways (src/gateway) run the Socket.IO Redis adapter on the
 * same key; in single-process mode the publisher emits through the Socket.IO server attached to
 * the API's own HTTP server.
 */
export const rooms = {
  /** Every member socket of a workspace. */
  workspace: (workspaceId: string) => `ws:${workspaceId}`,
  /** Every visitor socket of one guest. */
  guest: (guestId: string) => `guest:${guestId}`,
  /** Every socket of one member of one workspace (mention:new goes to the mentioned member only). */
  member: (workspaceId: string, userId: string) => `member:${workspaceId}:${userId}`,
}

/** The Redis channel key shared by the emitter and the gateway's adapter. */
export const socketIoKey = (prefix: string) => `${prefix}socket.io`

export type EventName = 'message:new' | 'message:updated' | 'conversation:updated' | 'user:presence' | 'mention:new' | 'visitor:updated'

export interface EventPublisher {
  /** Emits `event` to each room; never throws (a failed publish is logged, the request goes on). */
  publish(roomsToEmit: string[], event: EventName, payload: unknown): void
}

export function createPublisher(redis: RedisClient, prefix: string, log: Log): EventPublisher {
  // The emitter fires publish() and drops the promise; this client catches it so a Redis outage
  // is a log line, not an unhandled rejection.
  const safeClient = {
    publish: (channel: string, message: string | Buffer) =>
      redis.publish(channel, message).catch((err: Error) => {
        log.warn({ err: { message: err.message }, channel }, 'event publish failed')
        return 0
      }),
  }
  const emitter = new Emitter(safeClient as unknown as ConstructorParameters<typeof Emitter>[0], { key: socketIoKey(prefix) })
  return {
    publish(roomsToEmit, event, payload) {
      try {
        if (roomsToEmit.length === 0) return
        emitter.to(roomsToEmit).emit(event, payload)
      } catch (err) {
        log.warn({ err, event }, 'event publish failed')
      }
    },
  }
}

/** The in-process publisher: emits through the gateway attached to this process (none yet: dropped). */
export interface LocalPublisher extends EventPublisher {
  /** The attached gateway's server (null when it closes). */
  attach(io: Server | null): void
}

export function createLocalPublisher(log: Log): LocalPublisher {
  let server: Server | null = null
  return {
    attach(io) {
      server = io
    },
    publish(roomsToEmit, event, payload) {
      try {
        if (roomsToEmit.length === 0 || !server) return
        server.to(roomsToEmit).emit(event, payload)
      } catch (err) {
        log.warn({ err, event }, 'event publish failed')
      }
    },
  }
}
