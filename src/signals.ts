import { EventEmitter } from 'node:events'
import { Cluster } from 'ioredis'
import type { RedisClient } from './redis.js'
import type { Log } from './logger.js'

/**
 * Signals between Parley's own processes (not to browsers): today one, "a member came online",
 * sent by the gateway that saw it and received by every API replica, whose router then offers
 * that member's teams' queues (docs/routing.md). Two implementations, chosen in src/mode.ts:
 * Redis pub/sub (replicas and gateways) or an in-process emitter (single-process mode). A lost
 * signal costs at most one sweep interval: the routers' sweep is the backstop.
 */
export interface MemberOnline {
  workspaceId: string
  userId: string
}

export interface Signals {
  memberOnline(signal: MemberOnline): void
  /** Calls `handler` for every memberOnline of any process; returns the unsubscribe. */
  onMemberOnline(handler: (signal: MemberOnline) => void): () => void
  close(): Promise<void>
}

export const signalChannel = (prefix: string) => `${prefix}signal:member-online`

export function createLocalSignals(): Signals {
  const emitter = new EventEmitter()
  return {
    memberOnline: (signal) => void emitter.emit('online', signal),
    onMemberOnline(handler) {
      emitter.on('online', handler)
      return () => void emitter.off('online', handler)
    },
    close: async () => void emitter.removeAllListeners(),
  }
}

/** Publishes with `redis`; subscribes (on the first handler) with a duplicate of it. */
export function createRedisSignals(redis: RedisClient, prefix: string, log: Log): Signals {
  const channel = signalChannel(prefix)
  const handlers = new Set<(signal: MemberOnline) => void>()
  let sub: RedisClient | null = null
  const subscribe = () => {
    // Its own connection, queueing the SUBSCRIBE until connected (the API's client refuses
    // commands while disconnected); ioredis subscribes again after each reconnection.
    sub = redis instanceof Cluster ? redis.duplicate() : redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null })
    sub.on('error', () => {}) // the main client reports Redis errors
    sub.on('message', (_channel: string, message: string) => {
      let signal: MemberOnline
      try {
        signal = JSON.parse(message) as MemberOnline
      } catch {
        return
      }
      if (typeof signal.workspaceId !== 'string' || typeof signal.userId !== 'string') return
      for (const h of handlers) h(signal)
    })
    sub.subscribe(channel).catch((err: Error) => log.warn({ err: { message: err.message } }, 'signal subscription failed'))
  }
  return {
    memberOnline(signal) {
      redis.publish(channel, JSON.stringify(signal)).catch((err: Error) => log.warn({ err: { message: err.message } }, 'signal publish failed'))
    },
    onMemberOnline(handler) {
      handlers.add(handler)
      if (!sub) subscribe()
      return () => void handlers.delete(handler)
    },
    async close() {
      handlers.clear()
      if (sub) sub.disconnect()
      sub = null
    },
  }
}
