/**
 * The page a visitor reads, as the widget reports it (API.md section 13): origin and path only.
 * A query string or fragment is where reset tokens, OAuth fragments (`#access_token=`) and
 * tracking ids live, and credentials in the URL (`user:pass@`) are not part of the origin: none
 * of them leave the browser. The server strips the same again (src/gateway/connections.ts).
 */
export function pageUrl(href: string): string {
  try {
    const url = new URL(href)
    return `${url.origin}${url.pathname}`
  } catch {
    return ''
  }
}
