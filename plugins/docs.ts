import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { ErrorResponse } from '../schemas/common.js'

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
      // also takes an absent body (plugins/input.ts), so say so.
      transformObject: (doc) => {
        if (!('openapiObject' in doc)) return doc.swaggerObject
        for (const path of Object.values(doc.openapiObject.paths ?? {})) {
          for (const op of Object.values(path ?? {}) as { requestBody?: { required?: boolean; content?: Record<string, { schema?: { required?: string[] } }> } }[]) {
            const schema = op?.requestBody?.content?.['application/json']?.schema
            if (op?.requestBody && !schema?.required?.length) op.requestBody.required = false
          }
        }
        return doc.openapiObject
      },
    })
    await app.register(swaggerUi, { routePrefix: '/docs' })
  },
  { name: 'docs' },
)
