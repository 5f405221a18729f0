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
