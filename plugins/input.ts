import type { preValidationAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { nulCharacter } from '../src/errors.js'
import { findNul } from '../src/validation.js'

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** An absent body (no bytes, or JSON null) validates as {}. */
const absentBodyIsEmpty: preValidationAsyncHookHandler = async (request) => {
  if (request.body === undefined || request.body === null) request.body = {}
}

/**
 * What input may be, one rule for every route:
 * - No NUL character in any string of the query, the path or the body: PostgreSQL text cannot
 *   store it, so it is a 400 up front rather than a database error.
 * - JSON only. Fastify parses text/plain by default; the contract takes JSON (anything else is
 *   415). A route that needs the raw bytes (webhooks) adds its own parser in its own scope.
 * - An empty body with Content-Type: application/json is "no body", not malformed JSON (agent
 *   apps send it on PATCH routes that take none).
 * - Every POST, PUT, PATCH and DELETE route declares `schema.body`: its own, or NoBody
 *   (schemas/common.ts) when it takes none; the app refuses to start otherwise. A route whose body
 *   schema requires no field takes an absent body as {}, so `{}`, `null` and nothing are the
 *   same, and any field is an unknown field (400), as everywhere.
 */
export default fp(
  async (app) => {
    const defaultJson = app.getDefaultJsonParser('error', 'error')
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
      if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined)
      defaultJson(req, body as string, done)
    })

    app.addHook('preValidation', async (request) => {
      const hit = findNul(request.query, '') ?? findNul(request.params, '') ?? findNul(request.body, '')
      if (hit) throw nulCharacter(hit)
    })

    app.addHook('onRoute', (route) => {
      const body = route.schema?.body as { required?: string[] } | undefined
      const methods = [route.method].flat()
      if (!body) {
        if (methods.some((m) => WRITES.has(m))) {
          throw new Error(`route ${methods.join(',')} ${route.url} declares no schema.body (NoBody from schemas/common.ts when it takes none)`)
        }
        return
      }
      if (body.required?.length) return
      const existing = route.preValidation ? [route.preValidation].flat() : []
      route.preValidation = [absentBodyIsEmpty, ...existing]
    })
  },
  { name: 'input' },
)
