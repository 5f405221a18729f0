/**
 * The widget's DOM, built once inside a shadow root. Text from the network is only ever set with
 * textContent (never innerHTML), so a message cannot inject markup into the host page.
 * Accessibility: the launcher is a real button with aria-expanded, the panel a labelled dialog,
 * the thread a polite live region, every control has a label, Escape closes and focus returns
 * to the launcher.
 */
import type { Attachment, Message } from './api.js'
import { css } from './styles.js'

type Attrs = Record<string, string | boolean | undefined>

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue
    if (k === 'class') el.className = String(v)
    else el.setAttribute(k, v === true ? '' : v)
  }
  el.append(...children)
  return el
}

const CLIP =
  '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M16.5 6.5v10a4.5 4.5 0 0 1-9 0V5a3 3 0 0 1 6 0v10.5a1.5 1.5 0 0 1-3 0V6.5H9v9a3 3 0 0 0 6 0V5a4.5 4.5 0 0 0-9 0v11.5a6 6 0 0 0 12 0v-10z"/></svg>'
const ICON =
  '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>'

export class View {
  readonly host: HTMLElement
  readonly root: HTMLDivElement
  readonly launcher = h('button', { class: 'launcher', type: 'button', 'aria-label': 'Open chat', 'aria-expanded': 'false', 'aria-controls': 'parley-panel' })
  readonly badge = h('span', { class: 'badge', hidden: true })
  readonly title = h('h2', { id: 'parley-title' }, 'Chat')
  readonly status = h('p', { class: 'status' })
  readonly close = h('button', { class: 'close', type: 'button', 'aria-label': 'Close chat' }, '×')
  readonly greeting = h('p', { class: 'greeting', hidden: true })
  readonly thread = h('ol', { role: 'log', 'aria-live': 'polite', 'aria-label': 'Messages' })
  readonly note = h('p', { class: 'note', role: 'status' })
  /** "You are number N in line" while the conversation waits in its team's queue. */
  readonly queue = h('p', { class: 'queue', role: 'status', hidden: true })
  readonly extra = h('div')
  readonly body = h('div', { class: 'body' }, this.greeting, this.thread, this.queue, this.note, this.extra)
  readonly uploads = h('div', { class: 'uploads', 'aria-live': 'polite' })
  readonly file = h('input', { type: 'file', multiple: true, hidden: true, 'aria-hidden': 'true', tabindex: '-1' })
  readonly attach = h('button', { class: 'icon', type: 'button', 'aria-label': 'Attach a file', title: 'Attach a file (or drop or paste one)' })
  readonly input = h('textarea', { rows: '1', 'aria-label': 'Type your message', placeholder: 'Type your message…', maxlength: '10000' })
  readonly send = h('button', { class: 'send', type: 'submit' }, 'Send')
  readonly composer = h('form', { class: 'composer', 'aria-label': 'Send a message' }, this.file, this.attach, this.input, this.send)
  readonly panel = h(
    'section',
    { class: 'panel', id: 'parley-panel', role: 'dialog', 'aria-labelledby': 'parley-title', hidden: true },
    h('header', {}, h('div', {}, this.title, this.status), this.close),
    this.body,
    this.uploads,
    this.composer,
  )

  constructor() {
    // A custom element name: host-page rules aimed at div, section or * with !important still lose
    // to the inline !important below, which also resets what it would inherit.
    this.host = document.createElement('parley-widget')
    this.host.setAttribute('style', 'all: initial !important; position: fixed !important; z-index: 2147483647 !important; display: block !important;')
    const shadow = this.host.attachShadow({ mode: 'open' })
    const style = document.createElement('style')
    style.textContent = css
    this.launcher.innerHTML = ICON // constants of this file, not data
    this.attach.innerHTML = CLIP
    this.launcher.append(this.badge)
    this.root = h('div', { class: 'root' }, this.launcher, this.panel)
    shadow.append(style, this.root)
  }

  setColor(color: string): void {
    if (/^#[0-9a-fA-F]{6}$/.test(color)) this.root.style.setProperty('--accent', color)
  }

  setUnread(n: number): void {
    this.badge.hidden = n <= 0
    this.badge.textContent = n > 99 ? '99+' : String(n)
    this.launcher.setAttribute('aria-label', n > 0 ? `Open chat, ${n} unread message${n === 1 ? '' : 's'}` : 'Open chat')
  }

  setOpen(open: boolean): void {
    this.panel.hidden = !open
    this.launcher.setAttribute('aria-expanded', String(open))
  }

  scrollToEnd(): void {
    this.body.scrollTop = this.body.scrollHeight
  }
}

/** One message bubble; `onFile` opens an attachment (fetched with the visitor's header). */
export function messageItem(m: Message, onFile: (a: Attachment, into?: HTMLImageElement) => void): HTMLLIElement {
  const li = h('li', { class: m.senderType, 'data-id': m.id })
  if (m.senderType === 'AGENT') li.append(h('span', { class: 'who' }, m.senderName))
  if (m.body) li.append(m.body)
  for (const a of m.attachments ?? []) {
    const link = h('button', { class: 'file', type: 'button', 'aria-label': `Open ${a.filename}` }, `${a.filename} (${size(a.size)})`)
    link.addEventListener('click', () => onFile(a))
    li.append(link)
    if (a.contentType.startsWith('image/')) {
      const img = h('img', { alt: a.filename })
      li.append(img)
      onFile(a, img)
    }
  }
  return li
}

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}
