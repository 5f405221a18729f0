import t from 'tap'
import { pageUrl } from '../../widget/src/page.js'

// What the widget reports as the visitor's page (API.md section 13): origin and path only.
t.test('pageUrl keeps the origin and path, never the query, fragment or URL credentials', async (t) => {
  const table: [string, string][] = [
    ['https://shop.example/reset?token=x#access_token=y', 'https://shop.example/reset'],
    ['https://shop.example/cb#access_token=abc&token_type=bearer', 'https://shop.example/cb'],
    ['https://user:secret@shop.example:8443/a/b/?q=1', 'https://shop.example:8443/a/b/'],
    ['http://shop.example', 'http://shop.example/'],
    ['https://shop.example/?', 'https://shop.example/'],
    ['https://shop.example/caf%C3%A9', 'https://shop.example/caf%C3%A9'],
    ['not a url', ''],
  ]
  for (const [href, url] of table) t.equal(pageUrl(href), url, href)
})
