import { Type } from '@sinclair/typebox'
import { Cursor, CursorPage, Limit } from './common.js'
import { Conversation } from './conversations.js'

export const SearchQuery = Type.Object(
  {
    q: Type.String({ minLength: 2, maxLength: 200 }),
    limit: Limit,
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
)

export const SearchItem = Type.Object({
  ...Conversation.properties,
  match: Type.String({ description: 'Excerpt, HTML-escaped, hits wrapped in <mark>…</mark>' }),
})

export const SearchPage = CursorPage(SearchItem)
