/**
 * The widget's behaviour: configuration, the visitor session, the conversation, sending with
 * clientMessageId, live events from the gateway, uploads, page visits, the rating and the
 * offline form. Uses only the public contract (API.md sections 4, 5, 6, 10, 13, 14).
 */
import { io, type Socket } from 'socket.io-client'
import { Api, ApiError, retrying, type Attachment, type Conversation, type Message, type WidgetConfig } from './api.js'
import { pageUrl } from './page.js'
import { load, save, type Saved } from './store.js'
import { h, messageItem, size, View } from './view.js'

export interface Options {
  apiUrl: string
  gatewayUrl: string
  channelId: string
  channelToken?: string
  /** The host page's visitor, when it knows them (a logged-in customer). */
  name?: string
  email?: string
  identityHash?: string
}

/** Until GET /support/widget answers (or if it cannot): a plain, online widget. */
const DEFAULT_CONFIG: Omit<WidgetConfig, 'channelId'> = {
  name: 'Chat',
  color: '#1f6feb',
  greeting: '',
  awayMessage: '',
  expectedReplyTime: 'minutes',
  online: true,
  withinOfficeHours: true,
  csatEnabled: false,
}

const REPLY_TIME = { minutes: 'We usually reply in a few minutes', hours: 'We usually reply within a few hours', day: 'We usually reply within a day' }

/** ", about 3 minutes" from the estimate (the median wait of the team's last day), or nothing. */
function waitText(seconds: number | null): string {
  if (seconds === null) return ''
  const minutes = Math.max(1, Math.round(seconds / 60))
  return `, about ${minutes} minute${minutes === 1 ? '' : 's'}`
}

const resolved = (c: Conversation | undefined) => c !== undefined && (c.status === 'RESOLVED' || c.status === 'CLOSED')

function uuid(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  // randomUUID needs a secure context; getRandomValues does not (plain-http host pages).
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6] & 0x0f) | 0x40
  b[8] = (b[8] & 0x3f) | 0x80
  const x = Array.from(b, (v) => v.toString(16).padStart(2, '0')).join('')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}

export class Widget {
  private readonly api: Api
  private readonly view = new View()
  private config: WidgetConfig
  private saved: Saved | undefined
  private conversation: Conversation | undefined
  private readonly rendered = new Map<string, HTMLLIElement>()
  private readyFiles: Attachment[] = []
  private socket: Socket | undefined
  private connectedBefore = false
  private lastVisit = 0
  private visitTimer: ReturnType<typeof setTimeout> | undefined
  private lastVisited: { url: string; title: string } | undefined
  private open = false
  private ready: Promise<void> = Promise.resolve()
  /** Shown under an open conversation (after an offline message). */
  private notice = ''

  constructor(private readonly opts: Options) {
    this.api = new Api(opts.apiUrl, opts.channelToken)
    this.config = { channelId: opts.channelId, ...DEFAULT_CONFIG }
  }

  get identity(): string {
    return `${this.opts.email ?? ''}|${this.opts.identityHash ?? ''}`
  }

  /** Who is online changes: asked again on every open (the browser's cache keeps it cheap). */
  private async refreshConfig(): Promise<void> {
    const before = this.config.online
    this.config = (await this.api.config(this.opts.channelId).catch(() => undefined))?.data ?? this.config
    this.applyConfig()
    if (this.config.online !== before) this.render()
  }

  async start(): Promise<void> {
    try {
      this.config = (await this.api.config(this.opts.channelId)).data
    } catch (err) {
      // An unknown channel or a wrong channel token: nothing to show. Anything else: defaults.
      if (err instanceof ApiError && (err.code === 'CHANNEL_NOT_FOUND' || err.status === 401)) {
        console.warn(`Parley widget: ${err.message}`)
        return
      }
    }
    document.body.append(this.view.host)
    this.applyConfig()
    this.wire()
    this.saved = load(this.opts.channelId)
    this.view.setUnread(this.saved?.unread ?? 0)
    // The launcher works at once; what needs the session waits for `ready`.
    this.ready = this.session().then(async () => {
      this.connect()
      await this.restore()
      this.render()
    })
    await this.ready.catch(() => (this.view.note.textContent = 'Chat is unavailable right now.'))
  }

  /** Session, socket and restored conversation; after a failed start, the session is tried again. */
  private async whenReady(): Promise<void> {
    await this.ready.catch(async () => {
      this.ready = this.session().then(() => this.connect())
      await this.ready
    })
  }

  // ---------------------------------------------------------------- session and conversation

  /** Resumes the stored visitor session, or bootstraps one (POST /auth); a changed identity is sent along. */
  private async session(): Promise<void> {
    if (this.saved && this.saved.identity === this.identity) {
      this.api.session = this.saved.visitorSession
      return
    }
    this.api.session = this.saved?.visitorSession // resumes that guest (200) when still valid
    const { opts } = this
    const body = { channelId: opts.channelId, name: opts.name || 'Visitor', email: opts.email, identityHash: opts.identityHash }
    const { status, data } = await retrying(() => this.api.bootstrap(body))
    const sameGuest = status === 200 && data.guestId === this.saved?.guestId
    this.saved = {
      visitorSession: data.visitorSession,
      guestId: data.guestId,
      expiresAt: data.expiresAt,
      identity: this.identity,
      conversationId: sameGuest ? this.saved?.conversationId : undefined,
      unread: sameGuest ? this.saved?.unread : 0,
    }
    this.api.session = data.visitorSession
    save(this.opts.channelId, this.saved)
  }

  /** The session was refused (expired, revoked channel): start over as a new guest. */
  private async renewSession(): Promise<void> {
    this.saved = undefined
    this.api.session = undefined
    save(this.opts.channelId, undefined)
    this.setConversation(undefined)
    await this.session()
    this.socket?.disconnect().connect()
  }

  private persist(): void {
    if (this.saved) save(this.opts.channelId, this.saved)
  }

  private setConversation(c: Conversation | undefined): void {
    // Another conversation replaces the thread; the first one keeps what is being sent into it.
    if (this.conversation && c?.id !== this.conversation.id) {
      this.rendered.clear()
      this.view.thread.replaceChildren()
    }
    this.conversation = c
    if (this.saved) {
      this.saved.conversationId = c?.id
      this.persist()
    }
  }

  /** After a reload: the stored conversation, else the guest's newest one, with its messages. */
  private async restore(): Promise<void> {
    try {
      let c: Conversation | undefined
      const id = this.saved?.conversationId
      if (id) c = (await this.api.conversation(id).catch(() => undefined))?.data
      if (!c && this.saved) c = (await this.api.history(this.saved.guestId)).data.data[0]
      if (c && !c.deleted) {
        this.setConversation(c)
        // A history item carries no place in the queue: a single read does.
        if (c.queuedAt && c.queue === undefined) void this.refreshQueue()
        await this.loadMessages()
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) await this.renewSession().catch(() => undefined)
    }
  }

  private async loadMessages(): Promise<void> {
    const c = this.conversation
    if (!c) return
    let cursor: string | undefined
    for (let page = 0; page < 20; page++) {
      const { data } = await this.api.messages(c.id, cursor)
      for (const m of data.data) this.addMessage(m)
      if (!data.nextCursor) break
      cursor = data.nextCursor
    }
  }

  private async ensureConversation(): Promise<Conversation> {
    await this.whenReady()
    if (this.conversation) return this.conversation
    const saved = this.saved!
    try {
      const { data } = await retrying(() => this.api.createConversation(this.opts.channelId, saved.guestId))
      this.setConversation(data)
      // Routing may assign it while the answer travels, and that event came before the id was
      // known: a queued answer is read once more.
      if (data.queue) void this.refreshQueue()
    } catch (err) {
      // Five open already (other tabs): continue the newest rather than fail.
      if (!(err instanceof ApiError) || err.code !== 'TOO_MANY_OPEN_CONVERSATIONS') throw err
      this.setConversation((await this.api.history(saved.guestId)).data.data[0])
    }
    return this.conversation!
  }

  // ---------------------------------------------------------------- messages

  private addMessage(m: Message): void {
    if (this.rendered.has(m.id)) return
    const li = messageItem(m, (a, img) => void this.openFile(a, img))
    this.rendered.set(m.id, li)
    this.view.thread.append(li)
    this.view.scrollToEnd()
  }

  private async send(): Promise<void> {
    const text = this.view.input.value.trim()
    const files = this.readyFiles
    if (!text && files.length === 0) return
    this.view.input.value = ''
    this.readyFiles = []
    this.view.uploads.querySelectorAll('.upload.done').forEach((el) => el.remove())
    const draft = { body: text, clientMessageId: uuid(), attachmentIds: files.length ? files.map((f) => f.id) : undefined }
    const li = h('li', { class: 'GUEST pending', 'aria-busy': 'true' }, text, ...files.map((f) => h('span', { class: 'file' }, f.filename)))
    this.view.thread.append(li)
    this.view.scrollToEnd()
    await this.deliver(draft, li)
  }

  /** Sends one message; every retry carries the same clientMessageId, so none duplicates. */
  private async deliver(draft: { body: string; clientMessageId: string; attachmentIds?: string[] }, li: HTMLLIElement, renewed = false): Promise<void> {
    li.className = 'GUEST pending'
    li.querySelector('.retry')?.remove()
    try {
      const c = await this.ensureConversation()
      const { data } = await retrying(() => this.api.send(c.id, draft))
      if (this.rendered.has(data.id)) li.remove() // the gateway's copy arrived first
      else {
        const done = messageItem(data, (a, img) => void this.openFile(a, img))
        this.rendered.set(data.id, done)
        if (li.isConnected) li.replaceWith(done)
        else this.view.thread.append(done)
      }
      if (resolved(this.conversation)) this.conversation = { ...this.conversation!, status: 'OPEN' } // a guest message reopens it
      this.render()
    } catch (err) {
      if (err instanceof ApiError && err.status === 401 && !renewed) {
        await this.renewSession().catch(() => undefined)
        return this.deliver(draft, li, true)
      }
      li.className = 'GUEST failed'
      li.removeAttribute('aria-busy')
      const retry = h('button', { class: 'retry', type: 'button' }, 'Not sent. Retry')
      retry.addEventListener('click', () => void this.deliver(draft, li))
      li.append(retry)
    }
  }

  private async openFile(a: Attachment, img?: HTMLImageElement): Promise<void> {
    try {
      if (img) {
        const thumb = await this.api.media(`${a.url}?variant=thumb`).catch(() => this.api.media(a.url))
        img.src = URL.createObjectURL(thumb)
        return
      }
      const blob = await this.api.media(a.url)
      const link = h('a', { href: URL.createObjectURL(blob), download: a.filename })
      link.click()
    } catch {
      img?.remove()
    }
  }

  // ---------------------------------------------------------------- uploads

  private async upload(files: Iterable<File>): Promise<void> {
    for (const file of files) {
      const bar = h('progress', { max: '1', value: '0', 'aria-label': `Uploading ${file.name}` })
      const row = h('div', { class: 'upload' }, h('span', {}, `${file.name} (${size(file.size)})`), bar)
      this.view.uploads.append(row)
      try {
        const c = await this.ensureConversation()
        const attachment = await this.api.upload(c.id, file, (f) => (bar.value = f))
        row.className = 'upload done'
        bar.replaceWith(h('span', { class: 'sr' }, 'uploaded'), '✓')
        this.readyFiles.push(attachment)
      } catch (err) {
        row.className = 'upload error'
        bar.replaceWith(err instanceof ApiError && err.status === 413 ? 'too large' : err instanceof ApiError && err.status === 415 ? 'type not allowed' : 'failed')
        setTimeout(() => row.remove(), 6000)
      }
    }
  }

  // ---------------------------------------------------------------- live events

  private connect(): void {
    if (this.socket) return
    const socket = io(this.opts.gatewayUrl, {
      auth: (cb) => cb({ visitorSession: this.api.session }),
      transports: ['websocket'], // no sticky sessions needed behind a balancer (docs/realtime.md)
    })
    this.socket = socket
    socket.on('connect', () => {
      this.visit(true)
      // Events sent while disconnected are not replayed: the REST API is the source of truth.
      if (this.connectedBefore) void this.restore().then(() => this.render())
      this.connectedBefore = true
    })
    const renew = () =>
      void this.renewSession().catch((e: unknown) => {
        // The channel itself is gone (deactivated): stop, rather than retry for ever.
        if (e instanceof ApiError && e.code === 'CHANNEL_NOT_FOUND') {
          socket.disconnect()
          this.view.host.remove()
        }
      })
    socket.on('connect_error', (err: Error & { data?: { code?: string } }) => {
      // An expired session, or one its channel's deactivation revoked (SESSION_REVOKED).
      if (err.message === 'UNAUTHENTICATED' || err.message === 'SESSION_REVOKED' || err.data?.code === 'SESSION_REVOKED') renew()
    })
    socket.on('disconnect', (reason: string) => {
      // The gateway dropped us (session expired or revoked): renew, then reconnect.
      if (reason === 'io server disconnect') renew()
    })
    socket.on('message:new', (p: { conversationId: string; message: Message }) => {
      if (!this.conversation) void this.restore().then(() => this.render())
      if (p.conversationId !== this.conversation?.id) return
      const fresh = !this.rendered.has(p.message.id)
      this.addMessage(p.message)
      if (fresh && p.message.senderType === 'AGENT') {
        if (this.open) void this.markSeen()
        else this.bumpUnread()
      }
    })
    socket.on('conversation:updated', (p: { conversation: Conversation }) => {
      const before = this.conversation
      if (p.conversation.id !== before?.id) return
      if (p.conversation.deleted) this.setConversation(undefined)
      else {
        const next = { ...before, ...p.conversation }
        // Routing's events carry the place in the queue; others only `queuedAt`. Queued anew
        // (a reopen, a team change) without a place: ask for it.
        if (!('queue' in p.conversation)) {
          if (!next.queuedAt) next.queue = null
          else if (next.queuedAt !== before.queuedAt) {
            next.queue = undefined
            void this.refreshQueue()
          }
        }
        this.conversation = next
      }
      this.render()
    })
    for (const m of ['pushState', 'replaceState'] as const) {
      const original = history[m]
      history[m] = function (this: History, ...args: Parameters<History['pushState']>) {
        original.apply(this, args)
        window.dispatchEvent(new Event('parley:navigate'))
      }
    }
    for (const e of ['popstate', 'hashchange', 'parley:navigate']) window.addEventListener(e, () => this.visit(false))
  }

  /**
   * page:visit at most once a second (the gateway drops the rest); the latest page wins. Only the
   * page's origin and path leave the browser (pageUrl); a change of query or fragment alone sends
   * nothing new.
   */
  private visit(now: boolean): void {
    clearTimeout(this.visitTimer)
    const wait = now ? 0 : Math.max(0, this.lastVisit + 1100 - Date.now())
    this.visitTimer = setTimeout(() => {
      const visit = { url: pageUrl(location.href).slice(0, 2000), title: document.title.slice(0, 200) }
      if (!now && visit.url === this.lastVisited?.url && visit.title === this.lastVisited.title) return
      this.lastVisit = Date.now()
      this.lastVisited = visit
      this.socket?.emit('page:visit', visit)
    }, wait)
  }

  /** The conversation's place in its team's queue, from a single read (GET /conversations/:id). */
  private async refreshQueue(): Promise<void> {
    const id = this.conversation?.id
    if (!id) return
    const fresh = (await this.api.conversation(id).catch(() => undefined))?.data
    if (!fresh || fresh.id !== this.conversation?.id) return
    this.conversation = { ...this.conversation, queuedAt: fresh.queuedAt, queue: fresh.queue ?? null }
    this.render()
  }

  private bumpUnread(): void {
    if (!this.saved) return
    this.saved.unread = (this.saved.unread ?? 0) + 1
    this.persist()
    this.view.setUnread(this.saved.unread)
  }

  private async markSeen(): Promise<void> {
    if (this.saved?.unread) {
      this.saved.unread = 0
      this.persist()
    }
    this.view.setUnread(0)
    if (this.conversation) await this.api.markSeen(this.conversation.id).catch(() => undefined)
  }

  // ---------------------------------------------------------------- rendering

  private applyConfig(): void {
    const c = this.config
    this.view.setColor(c.color)
    this.view.title.textContent = c.name
    this.view.panel.setAttribute('aria-label', `Chat with ${c.name}`)
    this.view.greeting.textContent = c.greeting
    this.view.greeting.hidden = !c.greeting
    const away = !c.online || !c.withinOfficeHours
    this.view.status.textContent = away ? c.awayMessage || 'We are away right now' : REPLY_TIME[c.expectedReplyTime] ?? REPLY_TIME.minutes
  }

  /**
   * What the panel shows now: the chat; after a resolution, the rating card (CSAT on); when
   * nobody is online and no conversation is open, the offline form instead of the composer.
   */
  private render(): void {
    const c = this.conversation
    const offline = !this.config.online && (!c || resolved(c))
    this.view.composer.hidden = offline
    this.view.extra.replaceChildren()
    this.view.note.textContent = resolved(c) ? 'This conversation is resolved. Write again to reopen it.' : c ? this.notice : ''
    // Waiting for an agent of its team (API.md section 16): the visitor's place, live.
    const place = c && !resolved(c) && c.queuedAt ? c.queue : null
    this.view.queue.hidden = !place
    this.view.queue.textContent = place ? `You are number ${place.position} in line${waitText(place.estimatedWaitSeconds)}` : ''
    if (c && resolved(c) && this.config.csatEnabled) this.view.extra.append(this.ratingCard(c.id))
    if (offline) this.view.extra.append(this.offlineForm())
  }

  private offlineForm(): HTMLFormElement {
    const email = h('input', { type: 'email', id: 'parley-offline-email', autocomplete: 'email', maxlength: '254' })
    email.value = this.opts.email ?? ''
    const body = h('textarea', { id: 'parley-offline-body', rows: '4', required: true, maxlength: '10000' })
    const error = h('p', { class: 'error', role: 'alert' })
    const form = h(
      'form',
      { class: 'card offline', 'aria-label': 'Leave a message' },
      h('p', {}, this.config.awayMessage || 'Nobody is online right now. Leave a message and we will answer by e-mail.'),
      h('label', { for: 'parley-offline-email' }, 'Your e-mail'),
      email,
      h('label', { for: 'parley-offline-body' }, 'Message'),
      body,
      error,
      h('button', { class: 'send', type: 'submit' }, 'Send message'),
    )
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      const text = body.value.trim()
      if (!text) return void body.focus()
      error.textContent = ''
      void this.whenReady()
        .then(() => retrying(() => this.api.offlineMessage(text, email.value.trim() || undefined)))
        .then(
        async ({ data }) => {
          this.notice = 'Thanks! We will get back to you by e-mail.'
          this.setConversation(data)
          await this.loadMessages().catch(() => undefined)
          this.render()
        },
        (err: unknown) => (error.textContent = err instanceof ApiError ? err.message : 'Could not send, try again.'),
      )
    })
    return form
  }

  private ratingCard(conversationId: string): HTMLElement {
    const card = h('form', { class: 'card csat', 'aria-label': 'Rate this conversation' })
    const thanks = (rating: number) => card.replaceChildren(h('p', { role: 'status' }, `Thanks for your rating (${rating} of 5).`))
    let rating = 0
    const stars = h('div', { class: 'stars', role: 'group', 'aria-label': 'Rating' })
    for (let i = 1; i <= 5; i++) {
      const star = h('button', { type: 'button', 'aria-pressed': 'false', 'aria-label': `${i} star${i === 1 ? '' : 's'}`, 'data-rating': String(i) }, '★')
      star.addEventListener('click', () => {
        rating = i
        stars.querySelectorAll('button').forEach((b, j) => b.setAttribute('aria-pressed', String(j < i)))
      })
      stars.append(star)
    }
    const comment = h('textarea', { id: 'parley-csat-comment', rows: '2', maxlength: '1000' })
    const error = h('p', { class: 'error', role: 'alert' })
    card.append(h('p', {}, 'How was this conversation?'), stars, h('label', { for: 'parley-csat-comment' }, 'Comment (optional)'), comment, error, h('button', { class: 'send', type: 'submit' }, 'Send rating'))
    card.addEventListener('submit', (e) => {
      e.preventDefault()
      if (!rating) return void (error.textContent = 'Choose a rating from 1 to 5.')
      void this.api.rate(conversationId, rating, comment.value.trim() || undefined).then(
        ({ data }) => thanks(data.rating),
        (err: unknown) => (err instanceof ApiError && err.status === 409 ? card.remove() : (error.textContent = 'Could not send, try again.')),
      )
    })
    // Already rated (another tab, an earlier visit): say so instead of asking again.
    void this.api.csat(conversationId).then(({ data }) => thanks(data.rating), () => undefined)
    return card
  }

  private setOpenState(open: boolean): void {
    this.open = open
    this.view.setOpen(open)
    if (open) {
      void this.refreshConfig()
      void this.markSeen()
      this.view.scrollToEnd()
      const first = this.view.composer.hidden ? this.view.extra.querySelector<HTMLElement>('input, textarea, button') : this.view.input
      first?.focus()
    } else this.view.launcher.focus()
  }

  private wire(): void {
    const v = this.view
    v.launcher.addEventListener('click', () => this.setOpenState(!this.open))
    v.close.addEventListener('click', () => this.setOpenState(false))
    v.panel.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') this.setOpenState(false)
    })
    v.composer.addEventListener('submit', (e) => {
      e.preventDefault()
      void this.send()
    })
    v.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault()
        void this.send()
      }
    })
    v.attach.addEventListener('click', () => v.file.click())
    v.file.addEventListener('change', () => {
      if (v.file.files) void this.upload(Array.from(v.file.files))
      v.file.value = ''
    })
    v.input.addEventListener('paste', (e) => {
      const files = Array.from(e.clipboardData?.files ?? [])
      if (files.length) {
        e.preventDefault()
        void this.upload(files)
      }
    })
    v.panel.addEventListener('dragover', (e) => {
      if (!e.dataTransfer?.types.includes('Files')) return
      e.preventDefault()
      v.composer.classList.add('drop')
    })
    v.panel.addEventListener('dragleave', () => v.composer.classList.remove('drop'))
    v.panel.addEventListener('drop', (e) => {
      v.composer.classList.remove('drop')
      const files = Array.from(e.dataTransfer?.files ?? [])
      if (!files.length) return
      e.preventDefault()
      void this.upload(files)
    })
  }
}
