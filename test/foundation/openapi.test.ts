import SwaggerParser from '@apidevtools/swagger-parser'
import t from 'tap'
import { Attributes } from '../../schemas/visitors.js'
import { build } from '../helper.js'

// API.md section 8: the OpenAPI 3 document at /docs/json. Code generators refuse a document that
// does not validate, so the whole served document goes through a real OpenAPI validator: a
// later schema using a JSON Schema keyword OpenAPI 3.0 lacks fails here.
t.test('/docs/json is a valid OpenAPI 3 document', async (t) => {
  const { app } = await build(t)
  const res = await app.inject({ method: 'GET', url: '/docs/json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.match(doc.openapi, /^3\.0\./)
  // validate() dereferences in place: give it a copy.
  const errors = await SwaggerParser.validate(structuredClone(doc)).then(
    () => null,
    (err: Error) => err.message,
  )
  t.equal(errors, null, 'swagger-parser accepts the document')

  // A keyword 3.0 lacks is published as an extension, and the schema requests are checked
  // against keeps it (the docs plugin rewrites a copy).
  const attributes = doc.paths['/visitors/{guestId}'].patch.requestBody.content['application/json'].schema.properties.attributes
  t.same(attributes['x-propertyNames'], { minLength: 1, maxLength: 64 })
  t.notOk('propertyNames' in attributes)
  t.same(Attributes.propertyNames, { minLength: 1, maxLength: 64 }, 'the route schema is untouched')
})
