import { Type, type Static } from '@sinclair/typebox'
import { Email, Literals, Uuid } from './common.js'

export const TranscriptFormat = Literals(['txt', 'json', 'html'], { default: 'txt' })
export type TranscriptFormatName = Static<typeof TranscriptFormat>

export const DownloadQuery = Type.Object(
  {
    format: TranscriptFormat,
  },
  { additionalProperties: false },
)

export const TranscriptBody = Type.Object({ email: Type.Optional(Email) }, { additionalProperties: false })

export const TranscriptQueued = Type.Object({ queued: Type.Literal(true), jobId: Uuid })

/** Optional: a client that retries with the same key never gets a second mail. */
export const TranscriptHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
})
