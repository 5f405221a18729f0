/**
 * Debounced `visitor:updated` (API.md section 2): at most one a second per guest, and a
 * reconnection within 5 seconds announces nothing. A widget that reconnects in a loop (a flaky
 * network, or a script) would otherwise send every member socket two events, each a database
 * read, per cycle.
 *
 * - `update`: something members should see (came online, changed page, its gateway died). Sent
 *   at once when nothing was sent for the guest in the last interval, else once at the end of the
 *   interval (trailing edge): what is sent is read when it is sent, so members end on the last
 *   state.
 * - `offline`: a socket close made the guest offline. Announced after `offlineDelayMs`, unless
 *   the guest reconnects first (`reconnected`), in which case nothing is sent at all: members
 *   saw the guest online and it still is.
 *
 * Per gateway: a reconnection that lands on another gateway is announced online there, and the
 * first gateway's delayed offline, finding the guest online again when it fires, is not sent.
 */
export interface VisitorAnnouncer {
  update(workspaceId: string, guestId: string): void
  offline(workspaceId: string, guestId: string): void
  /**
   * A socket of the guest connected. True when it needs no announcement: an offline was pending
   * (now dropped) and the last thing members heard from this gateway was the guest online.
   */
  reconnected(guestId: string): boolean
  /** Drops everything pending (the gateway is closing: entries are left to expire). */
  stop(): void
}

/**
 * Sends visitor:updated now (`onlyIfOffline`: unless the guest turns out to be online again);
 * resolves with the `online` members were sent, or null when nothing was sent.
 */
export type SendVisitor = (workspaceId: string, guestId: string, onlyIfOffline: boolean) => Promise<boolean | null>

interface Entry {
  workspaceId: string
  timer?: NodeJS.Timeout
  /** What the timer does: send the delayed offline, send an update, or forget the entry. */
  kind?: 'offline' | 'update' | 'forget'
  lastSentAt: number
  /** `online` as members last heard it from this gateway (undefined: nothing sent yet). */
  shown?: boolean
  sending: boolean
  /** An update arrived while sending: another one follows. */
  again: boolean
}

export function visitorAnnouncer(send: SendVisitor, opts: { minIntervalMs: number; offlineDelayMs: number }, now: () => number = Date.now): VisitorAnnouncer {
  const guests = new Map<string, Entry>()

  const entry = (workspaceId: string, guestId: string) => {
    let e = guests.get(guestId)
    if (!e) guests.set(guestId, (e = { workspaceId, lastSentAt: -Infinity, sending: false, again: false }))
    return e
  }
  const arm = (e: Entry, kind: Entry['kind'], delayMs: number, fn: () => void) => {
    if (e.timer) clearTimeout(e.timer)
    e.kind = kind
    e.timer = setTimeout(() => {
      e.timer = undefined
      e.kind = undefined
      fn()
    }, delayMs)
    e.timer.unref()
  }
  const disarm = (e: Entry) => {
    if (e.timer) clearTimeout(e.timer)
    e.timer = undefined
    e.kind = undefined
  }
  /** Idle: the entry is kept only as long as it throttles the next update. */
  const rest = (guestId: string, e: Entry) => {
    if (e.timer || e.sending) return
    arm(e, 'forget', Math.max(0, e.lastSentAt + opts.minIntervalMs - now()), () => {
      if (!e.timer && !e.sending && guests.get(guestId) === e) guests.delete(guestId)
    })
  }
  const flush = (guestId: string, e: Entry, onlyIfOffline: boolean) => {
    e.sending = true
    e.lastSentAt = now()
    send(e.workspaceId, guestId, onlyIfOffline).then((online) => {
      if (online !== null) e.shown = online
      e.sending = false
      if (e.again) {
        e.again = false
        update(e.workspaceId, guestId)
      } else rest(guestId, e)
    })
  }
  const update = (workspaceId: string, guestId: string) => {
    const e = entry(workspaceId, guestId)
    // A pending offline or update reads the state when it fires: it covers this one.
    if (e.kind === 'offline' || e.kind === 'update') return
    if (e.sending) {
      e.again = true
      return
    }
    arm(e, 'update', Math.max(0, e.lastSentAt + opts.minIntervalMs - now()), () => flush(guestId, e, false))
  }

  return {
    update,
    offline(workspaceId, guestId) {
      const e = entry(workspaceId, guestId)
      e.again = false
      arm(e, 'offline', opts.offlineDelayMs, () => flush(guestId, e, true))
    },
    reconnected(guestId) {
      const e = guests.get(guestId)
      if (e?.kind !== 'offline') return false
      disarm(e)
      if (e.shown !== true) return false // members never heard it online: the caller announces it
      rest(guestId, e)
      return true
    },
    stop() {
      for (const e of guests.values()) disarm(e)
      guests.clear()
    },
  }
}
