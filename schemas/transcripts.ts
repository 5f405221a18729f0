import { Type } from '@sinclair/typebox'
import { Email, Uuid } from './common.js'

export const ConversationIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) })

export const DownloadQuery = Type.Object(
  {
    format: Type.Union([Type.Literal('txt'), Type.Literal('json'), Type.Literal('html')], { default: 'txt' }),
  },
  { additionalProperties: false },
)

export const TranscriptBody = Type.Object({ email: Type.Optional(Email) }, { additionalProperties: false })

export const TranscriptQueued = Type.Object({ queued: Type.Literal(true), jobId: Uuid })

/** Optional: a client that retries with the same key never gets a second mail. */
export const TranscriptHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
})
