import { Type, type Static } from '@sinclair/typebox'
import { Cursor, CursorPage, Limit, Timestamp, Uuid } from './common.js'

/** Shapes of /uploads, /media and /conversations/:id/attachments (src/attachments/, API.md section 10). */

export const Attachment = Type.Object(
  {
    id: Uuid,
    conversationId: Uuid,
    filename: Type.String(),
    contentType: Type.String(),
    size: Type.Integer(),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    width: Type.Optional(Type.Integer()),
    height: Type.Optional(Type.Integer()),
    url: Type.String({ description: '/media/<id>, or with ?token= a signed expiring link' }),
    createdAt: Timestamp,
  },
  { description: 'An uploaded file (API.md section 10)' },
)
export type AttachmentView = Static<typeof Attachment>

export const AttachmentPage = CursorPage(Attachment)

export const AttachmentsQuery = Type.Object({ limit: Limit, cursor: Type.Optional(Cursor) }, { additionalProperties: false })

/**
 * POST /uploads takes multipart/form-data, read as a stream by the handler (never buffered). This
 * schema documents it for OpenAPI; both parts are required and their order (conversationId first)
 * is checked while reading, so the validator sees no body (the fields are optional here).
 */
export const UploadBody = Type.Object(
  {
    conversationId: Type.Optional(Type.String({ format: 'uuid', description: 'required, the first part' })),
    file: Type.Optional(Type.String({ format: 'binary', description: 'required: one file part, after conversationId' })),
  },
  { additionalProperties: false },
)

export const MediaQuery = Type.Object(
  {
    variant: Type.Optional(Type.Literal('thumb')),
    download: Type.Optional(Type.Union([Type.Literal('1'), Type.Literal('true')])),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
)
export type MediaQueryInput = Static<typeof MediaQuery>
