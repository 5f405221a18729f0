/**
 * What the widget keeps across page loads, per channel, in the host site's localStorage: the
 * visitor session (so a reload or the next page resumes the same guest and conversation), the
 * identity it was made for, and the unread count of the closed launcher.
 */
export interface Saved {
  visitorSession: string
  guestId: string
  expiresAt: string
  /** The host page's identity (e-mail and hash) the session was made for. */
  identity: string
  conversationId?: string
  unread?: number
}

const key = (channelId: string) => `parley:${channelId}`

export function load(channelId: string): Saved | undefined {
  try {
    const raw = localStorage.getItem(key(channelId))
    if (!raw) return undefined
    const saved = JSON.parse(raw) as Saved
    if (typeof saved.visitorSession !== 'string' || typeof saved.guestId !== 'string') return undefined
    // A session about to expire is renewed now rather than failing mid-conversation.
    if (!(Date.parse(saved.expiresAt) > Date.now() + 60_000)) return undefined
    return saved
  } catch {
    return undefined // storage blocked (privacy mode) or corrupt: start afresh
  }
}

export function save(channelId: string, saved: Saved | undefined): void {
  try {
    if (saved) localStorage.setItem(key(channelId), JSON.stringify(saved))
    else localStorage.removeItem(key(channelId))
  } catch {
    // storage blocked: the widget works for this page only
  }
}
