/**
 * The demo's minimal agent pane (GET /demo, development only): a member token from
 * `npm run token`, then the member API: a workspace and a channel made on first use, the open
 * conversations, one opened, a reply, a close. Connected to the gateway as a member, so the
 * widget beside it sees someone online and both sides update live.
 */
import { io, type Socket } from 'socket.io-client'

interface Conversation {
  id: string
  guest: { name: string; email: string | null }
  status: string
  unreadCount: number
  lastMessagePreview: string | null
  labels?: { id: string; name: string }[]
  /** An e-mail conversation's subject (null on web chat). */
  subject?: string | null
}
interface Message {
  id: string
  senderType: string
  senderName: string
  body: string
  private?: boolean
  attachments?: { filename: string }[]
  /** An e-mail reply's delivery (null on web chat). */
  delivery?: { status: string; error: string | null } | null
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T
const KEY = 'parley-demo:'
const state = {
  token: localStorage.getItem(KEY + 'token') ?? '',
  workspaceId: '',
  current: undefined as string | undefined,
  socket: undefined as Socket | undefined,
}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${state.token}` }
  if (state.workspaceId) headers['x-workspace-id'] = state.workspaceId
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const data = res.status === 204 ? undefined : await res.json()
  if (!res.ok) throw new Error(`${method} ${path}: ${(data as { message?: string })?.message ?? res.status}`)
  return data as T
}

function status(text: string): void {
  $('status').textContent = text
}

function item(tag: string, text: string, cls = ''): HTMLElement {
  const el = document.createElement(tag)
  el.textContent = text
  if (cls) el.className = cls
  return el
}

/** "✉ <subject>" before an e-mail conversation's name; nothing for web chat. */
const mailTag = (c: Conversation) => (c.subject != null ? `\u2709 ${c.subject} \u00b7 ` : '')

/** An e-mail reply's delivery after its text: " (sent)", " (queued: <error>)". */
const deliveryTag = (m: Message) => (m.delivery ? ` (${m.delivery.status}${m.delivery.error ? `: ${m.delivery.error}` : ''})` : '')

/** First use makes a workspace "Demo Shop" and its web channel; later ones reuse them. */
async function setup(): Promise<void> {
  state.workspaceId = ''
  const workspaces = await api<{ data: { id: string; name: string }[] }>('GET', '/workspaces')
  state.workspaceId = workspaces.data[0]?.id ?? (await api<{ id: string }>('POST', '/workspaces', { name: 'Demo Shop' })).id
  const channels = await api<{ data: { id: string; channelToken: string; active: boolean }[] }>('GET', '/channels')
  // The shop's widget needs a web channel (an e-mail channel has no widget).
  let channel = channels.data.find((c) => c.active && (c as { kind?: string }).kind !== 'email')
  if (!channel) {
    channel = await api<{ id: string; channelToken: string; active: boolean }>('POST', '/channels', { name: 'Northwind Roasters' })
    // The widget's look and a greeting (section 14); a server without widget settings keeps the defaults.
    await api('PATCH', `/channels/${channel.id}`, {
      widget: { color: '#7a4a2a', greeting: 'Hi! Questions about beans, brewing or an order? Ask us here.', csatEnabled: true },
    }).catch(() => undefined)
  }
  $('workspace').textContent = `Workspace ${state.workspaceId}, channel ${channel.id}`
  // Online before the shop loads: the widget reads `online` when it starts.
  await connect()
  const shop = $<HTMLIFrameElement>('shop')
  const src = `/demo/shop?channelId=${channel.id}&channelToken=${encodeURIComponent(channel.channelToken)}`
  if (shop.getAttribute('src') !== src) {
    shop.removeAttribute('srcdoc') // srcdoc wins over src while present
    shop.src = src
  }
  await refresh()
  status('Signed in. Write in the shop\'s chat, then answer here.')
}

/** Resolves at the first connection (or failure: the pane still works without live updates). */
function connect(): Promise<void> {
  state.socket?.disconnect()
  const gateway = document.body.dataset.gatewayUrl || location.origin
  const socket = io(gateway, { auth: { token: state.token, workspaceId: state.workspaceId }, transports: ['websocket'] })
  state.socket = socket
  const first = new Promise<void>((resolve) => {
    socket.once('connect', () => resolve())
    socket.once('connect_error', () => resolve())
  })
  socket.on('connect', () => ($('live').textContent = 'live'))
  socket.on('disconnect', () => ($('live').textContent = 'offline'))
  socket.on('connect_error', (err: Error) => ($('live').textContent = `gateway: ${err.message}`))
  socket.on('message:new', () => void refresh())
  socket.on('conversation:updated', () => void refresh())
  // An e-mail reply's delivery changed (queued, sent, failed).
  socket.on('message:updated', () => void refresh())
  return first
}

async function refresh(): Promise<void> {
  const list = await api<{ data: Conversation[] }>('GET', '/conversations?limit=50')
  const ul = $('list')
  ul.replaceChildren(
    ...list.data.map((c) => {
      const li = document.createElement('li')
      const button = item('button', `${mailTag(c)}${c.guest.name}${c.unreadCount ? ` (${c.unreadCount})` : ''}: ${c.lastMessagePreview ?? ''}`)
      button.setAttribute('aria-current', String(c.id === state.current))
      button.addEventListener('click', () => void openConversation(c.id))
      li.append(button)
      return li
    }),
  )
  if (list.data.length === 0) ul.append(item('li', 'No open conversations yet.', 'muted'))
  if (state.current) await showThread()
}

async function openConversation(id: string): Promise<void> {
  state.current = id
  $('conversation').hidden = false
  await api('PATCH', `/conversations/${id}/mark-seen`)
  await refresh()
}

async function showThread(): Promise<void> {
  const id = state.current!
  const messages = await api<{ data: Message[] }>('GET', `/conversations/${id}/messages?limit=100`)
  const c = await api<Conversation>('GET', `/conversations/${id}`)
  const labels = (c.labels ?? []).map((l) => ` [${l.name}]`).join('')
  const who = c.subject != null && c.guest.email ? `${c.guest.name} <${c.guest.email}>` : c.guest.name
  $('conversation-title').textContent = `${mailTag(c)}${who} (${c.status})${labels}`
  $('thread').replaceChildren(
    ...messages.data.map((m) => {
      const files = (m.attachments ?? []).map((a) => ` [${a.filename}]`).join('')
      return item('li', `${m.senderName}: ${m.body}${files}${deliveryTag(m)}`, m.senderType)
    }),
  )
}

$('token-form').addEventListener('submit', (e) => {
  e.preventDefault()
  state.token = $<HTMLInputElement>('token').value.trim()
  localStorage.setItem(KEY + 'token', state.token)
  void setup().catch((err: Error) => status(err.message))
})

$('reply-form').addEventListener('submit', (e) => {
  e.preventDefault()
  const input = $<HTMLTextAreaElement>('reply')
  const body = input.value.trim()
  if (!body || !state.current) return
  void api('POST', `/conversations/${state.current}/messages`, { body, clientMessageId: crypto.randomUUID() })
    .then(() => {
      input.value = ''
      return refresh()
    })
    .catch((err: Error) => status(err.message))
})

$('close').addEventListener('click', () => {
  if (!state.current) return
  void api('PATCH', `/conversations/${state.current}/close`)
    .then(() => {
      state.current = undefined
      $('conversation').hidden = true
      return refresh()
    })
    .catch((err: Error) => status(err.message))
})

/** Section 17 in the pane: a "VIP" label (made on first use) added to the conversation's labels. */
$('label-vip').addEventListener('click', () => {
  const id = state.current
  if (!id) return
  void (async () => {
    const labels = await api<{ data: { id: string; name: string }[] }>('GET', '/labels')
    const vip = labels.data.find((l) => l.name.toLowerCase() === 'vip') ?? (await api<{ id: string; name: string }>('POST', '/labels', { name: 'VIP', color: '#bf8700' }))
    const c = await api<Conversation>('GET', `/conversations/${id}`)
    const ids = [...new Set([...(c.labels ?? []).map((l) => l.id), vip.id])]
    await api('PUT', `/conversations/${id}/labels`, { labelIds: ids })
    await refresh()
  })().catch((err: Error) => status(err.message))
})

/** Snoozed for an hour: it leaves the open list and comes back when the hour is up or the guest writes. */
$('snooze').addEventListener('click', () => {
  if (!state.current) return
  void api('PATCH', `/conversations/${state.current}/snooze`, { until: new Date(Date.now() + 3600_000).toISOString() })
    .then(() => {
      state.current = undefined
      $('conversation').hidden = true
      return refresh()
    })
    .catch((err: Error) => status(err.message))
})

if (state.token) {
  $<HTMLInputElement>('token').value = state.token
  void setup().catch((err: Error) => status(err.message))
}
