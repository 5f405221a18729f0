/** Text made safe to place in HTML content or a quoted attribute (& < > " ' as numeric entities). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
