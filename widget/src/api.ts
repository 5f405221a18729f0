/**
 * The widget's client of Parley's public contract (API.md sections 4, 5, 10, 14): plain fetch,
 * the visitor session in `x-visitor-session`, the contract's error bodies turned into ApiError.
 * Nothing here knows about the DOM.
 */

export interface VisitorSession {
  visitorSession: string
  guestId: string
  channelId: string
  workspaceId: string
  expiresAt: string
}

export interface Attachment {
  id: string
  conversationId: string
  filename: string
  contentType: string
  size: number
  url: string
  width?: number
  height?: number
}

export interface Message {
  id: string
  conversationId: string
  senderType: 'GUEST' | 'AGENT' | 'SYSTEM'
  senderId: string | null
  senderName: string
  body: string
  attachments?: Attachment[]
  createdAt: string
}

/** The visitor's place in its team's queue (API.md section 16). */
export interface QueuePlace {
  position: number
  estimatedWaitSeconds: number | null
}

export interface Conversation {
  id: string
  guestId: string
  status: 'OPEN' | 'RESOLVED' | 'CLOSED'
  deleted?: boolean
  /** Set while it waits for an agent of its team; null once assigned or not waiting. */
  queuedAt?: string | null
  /** On a single read, the creation's answer and the events that move it; absent from list items. */
  queue?: QueuePlace | null
}

/** GET /support/widget/:channelId (section 14). */
export interface WidgetConfig {
  channelId: string
  name: string
  color: string
  greeting: string
  awayMessage: string
  expectedReplyTime: 'minutes' | 'hours' | 'day'
  online: boolean
  withinOfficeHours: boolean
  csatEnabled: boolean
}

export interface Csat {
  conversationId: string
  rating: number
  comment: string | null
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterS?: number,
  ) {
    super(message)
  }
  /** Worth sending again unchanged: the network, a 5xx or a rate limit. */
  get transient(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500
  }
}

type Json = Record<string, unknown>

export class Api {
  /** The visitor session sent with every call once known. */
  session: string | undefined

  constructor(
    readonly base: string,
    private readonly channelToken: string | undefined,
  ) {}

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = {}
    if (json) h['content-type'] = 'application/json'
    if (this.session) h['x-visitor-session'] = this.session
    if (this.channelToken) h['x-channel-token'] = this.channelToken
    return h
  }

  async call<T>(method: string, path: string, body?: Json): Promise<{ status: number; data: T }> {
    let res: Response
    try {
      res = await fetch(this.base + path, {
        method,
        headers: this.headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'omit', // credentials travel in headers, never cookies
      })
    } catch {
      throw new ApiError(0, 'NETWORK', 'Network error')
    }
    return { status: res.status, data: await readJson<T>(res) }
  }

  config(channelId: string) {
    return this.call<WidgetConfig>('GET', `/support/widget/${encodeURIComponent(channelId)}`)
  }

  bootstrap(input: { channelId: string; name: string; email?: string; identityHash?: string }) {
    return this.call<VisitorSession>('POST', '/auth', input)
  }

  createConversation(channelId: string, guestId: string) {
    return this.call<Conversation>('POST', '/conversations', { channelId, guestId })
  }

  conversation(id: string) {
    return this.call<Conversation>('GET', `/conversations/${id}`)
  }

  history(guestId: string) {
    return this.call<{ data: Conversation[] }>('GET', `/conversations/guest/${guestId}/history?limit=1`)
  }

  messages(id: string, cursor?: string) {
    const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''
    return this.call<{ data: Message[]; nextCursor: string | null }>('GET', `/conversations/${id}/messages?limit=100${q}`)
  }

  send(id: string, input: { body: string; clientMessageId: string; attachmentIds?: string[] }) {
    return this.call<Message>('POST', `/conversations/${id}/messages`, input)
  }

  markSeen(id: string) {
    return this.call<Conversation>('PATCH', `/conversations/${id}/mark-seen`)
  }

  csat(id: string) {
    return this.call<Csat>('GET', `/conversations/${id}/csat`)
  }

  rate(conversationId: string, rating: number, comment?: string) {
    return this.call<Csat>('POST', '/support/csat', comment ? { conversationId, rating, comment } : { conversationId, rating })
  }

  offlineMessage(body: string, email?: string) {
    return this.call<Conversation>('POST', '/support/offline-message', email ? { body, email } : { body })
  }

  /** The bytes of an attachment (the visitor's header cannot ride on a plain link). */
  async media(url: string): Promise<Blob> {
    const res = await fetch(this.base + url, { headers: this.headers(false), credentials: 'omit' })
    if (!res.ok) throw new ApiError(res.status, 'MEDIA', 'Could not load the file')
    return res.blob()
  }

  /** POST /uploads with progress (fetch reports none): `conversationId` first, then the file. */
  upload(conversationId: string, file: File, onProgress: (fraction: number) => void): Promise<Attachment> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      xhr.open('POST', `${this.base}/uploads`)
      for (const [k, v] of Object.entries(this.headers(false))) xhr.setRequestHeader(k, v)
      xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total)
      xhr.onerror = () => reject(new ApiError(0, 'NETWORK', 'Network error'))
      xhr.onload = () => {
        let data: Json = {}
        try {
          data = JSON.parse(xhr.responseText) as Json
        } catch {
          // not JSON: described by the status below
        }
        if (xhr.status === 201 || xhr.status === 200) resolve(data as unknown as Attachment)
        else reject(errorOf(xhr.status, data, Number(xhr.getResponseHeader('retry-after')) || undefined))
      }
      const form = new FormData()
      form.append('conversationId', conversationId)
      form.append('file', file, file.name)
      xhr.send(form)
    })
  }
}

function errorOf(status: number, body: Json, retryAfterS?: number): ApiError {
  const code = typeof body.code === 'string' ? body.code : 'HTTP_' + status
  const message = typeof body.message === 'string' ? body.message : 'Request failed'
  return new ApiError(status, code, message, retryAfterS)
}

async function readJson<T>(res: Response): Promise<T> {
  let body: unknown = undefined
  if (res.status !== 204) {
    try {
      body = await res.json()
    } catch {
      body = undefined
    }
  }
  if (!res.ok) throw errorOf(res.status, (body ?? {}) as Json, Number(res.headers.get('retry-after')) || undefined)
  return body as T
}

/** Runs `fn` again after transient failures (network, 5xx, 429 with its Retry-After), up to `attempts`. */
export async function retrying<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn()
    } catch (err) {
      if (!(err instanceof ApiError) || !err.transient || i >= attempts) throw err
      const waitS = err.retryAfterS ?? Math.min(8, 2 ** (i - 1))
      await new Promise((r) => setTimeout(r, waitS * 1000))
    }
  }
}
