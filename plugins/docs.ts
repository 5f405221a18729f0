import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { ErrorResponse } from '../schemas/common.js'

/**
 * JSON Schema keywords OpenAPI 3.0 schema objects do not have (a validator refuses the document,
 * code generators with it). Requests are still validated with them (Ajv, from the same TypeBox
 * objects); the published copy carries each as a specification extension (`x-propertyNames`),
 * which 3.0 allows and generators ignore. `const` is already converted by @fastify/swagger.
 */
const NOT_IN_OPENAPI_30 = new Set(['propertyNames', 'patternProperties'])

/**
 * A copy of `node` with those keywords renamed to `x-<keyword>`; the keys of a `properties` map
 * are field names, never keywords. Never mutates: the route schemas may share these objects.
 */
export function forOpenApi30(node: unknown, namesAreFields = false): unknown {
  if (Array.isArray(node)) return node.map((n) => forOpenApi30(n))
  if (node === null || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    const name = !namesAreFields && NOT_IN_OPENAPI_30.has(key) ? `x-${key}` : key
    out[name] = forOpenApi30(value, !namesAreFields && key === 'properties')
  }
  return out
}

/** OpenAPI 3 from the route schemas at /docs/json, and a browsable page at /docs. */
export default fp(
  async (app) => {
    app.addSchema(ErrorResponse)
    await app.register(swagger, {
      openapi: {
        info: { title: 'Parley API', version: '0.1.0', description: 'Customer messaging and support desk backend' },
        components: {
          securitySchemes: {
            member: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
            workspace: { type: 'apiKey', in: 'header', name: 'x-workspace-id' },
            visitor: { type: 'apiKey', in: 'header', name: 'x-visitor-session' },
          },
        },
      },
      // @fastify/swagger marks every request body required; a body schema that requires no field
      // also takes an absent body (plugins/input.ts), so say so. Then the keywords 3.0 lacks.
      transformObject: (doc) => {
        if (!('openapiObject' in doc)) return doc.swaggerObject
        for (const path of Object.values(doc.openapiObject.paths ?? {})) {
          for (const op of Object.values(path ?? {}) as { requestBody?: { required?: boolean; content?: Record<string, { schema?: { required?: string[] } }> } }[]) {
            const schema = op?.requestBody?.content?.['application/json']?.schema
            if (op?.requestBody && !schema?.required?.length) op.requestBody.required = false
          }
        }
        return forOpenApi30(doc.openapiObject) as typeof doc.openapiObject
      },
    })
    await app.register(swaggerUi, { routePrefix: '/docs' })
  },
  { name: 'docs' },
)
