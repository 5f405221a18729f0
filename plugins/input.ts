import type { preValidationAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { badRequest, nulInField } from '../src/errors.js'
import { applyQuerystringPolicy, findNul, scanJsonText } from '../src/validation.js'

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
      // Depth, size in values and NUL are checked on the text in one linear pass, before
      // anything parses or walks it; the value is walked only to name the field of a NUL.
      const scan = scanJsonText(body as string)
      if (scan.refusal) return done(badRequest(scan.refusal), undefined)
      defaultJson(req, body as string, (err, parsed) => {
        const nul = !err && scan.hasNul ? findNul(parsed) : null
        done(err ?? (nul ? nulInField(nul) : null), parsed)
      })
    })

    // JSON bodies are checked by the parser above; raw bodies (webhooks) are bytes, not fields.
    app.addHook('preValidation', async (request) => {
      const hit = findNul(request.query, 'querystring') ?? findNul(request.params, 'params')
      if (hit) throw nulInField(hit)
    })

    // Unknown query parameters: a 400 on every route but the provider-facing ones.
    app.addHook('onRoute', applyQuerystringPolicy)

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
