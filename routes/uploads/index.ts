import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Attachment, UploadBody } from '../../schemas/attachments.js'
import { errorResponses } from '../../schemas/common.js'
import { createUpload } from '../../src/attachments/uploads.js'
import { malformedUpload, unsupportedMediaType } from '../../src/errors.js'
import { limits } from '../../plugins/rate-limit.js'

/**
 * /uploads. This file's scope (and only it) reads multipart/form-data, as a stream: the handler
 * takes the parts in order and hands the file part to src/attachments/ without buffering it.
 */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(multipart, {
    // Our own counter refuses a file past the caller's limit with 413; this is a backstop.
    throwFileSizeLimit: false,
    // The file part's buffer: one socket read (64 KiB). 256 KiB here and in the inspector held
    // more per upload (20 concurrent uploads: +34 MiB RSS against +22 MiB) for no measurable speed
    // (issue 31, docs/attachments.md "Performance").
    fileHwm: 64 * 1024,
    limits: {
      fileSize: Math.max(app.config.UPLOAD_MAX_BYTES, app.config.UPLOAD_MAX_BYTES_VISITOR) + 1,
      files: 1,
      fields: 2,
      fieldNameSize: 100,
      fieldSize: 200,
      parts: 3,
      headerPairs: 20,
    },
  })

  app.post(
    '/',
    {
      config: { access: { member: 'conversations:write', visitor: true }, rateLimit: limits.visitorUploads(app.config) },
      schema: {
        tags: ['attachments'],
        summary: 'Upload a file (multipart: conversationId, then file); pending until a message names it',
        consumes: ['multipart/form-data'],
        body: UploadBody,
        response: { 201: Attachment, ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) throw unsupportedMediaType('Content-Type must be multipart/form-data')
      // The conversation first, so access is checked before any byte of the file is read.
      const parts = request.parts()
      const next = () => parts.next().catch((err: { statusCode?: number }) => {
        // The parser's own limit errors carry a 4xx; anything else is a malformed form (cut short, bad boundary).
        throw err.statusCode && err.statusCode < 500 ? err : malformedUpload('the body is not a complete multipart/form-data form')
      })
      const first = await next()
      const second = first.done || first.value.type !== 'field' || first.value.fieldname !== 'conversationId' ? null : await next()
      if (!second || second.done || second.value.type !== 'file' || second.value.fieldname !== 'file') {
        if (second && !second.done && second.value.type === 'file') second.value.file.resume()
        if (!first.done && first.value.type === 'file') first.value.file.resume()
        throw malformedUpload("the form must have a field 'conversationId' first, then one part 'file'")
      }
      const conversationId = String(first.value.value)
      const part = second.value
      const attachment = await createUpload(request.ctx, {
        conversationId,
        filename: part.filename,
        declaredType: part.mimetype,
        stream: part.file,
      })
      return reply.code(201).send(attachment)
    },
  )
}
export default routes
