import type { FastifyError } from 'fastify'

/**
 * One sentence naming the offending field, from Ajv's first error:
 * "unknown field 'role'", "missing field 'name'", "field 'limit' must be <= 100".
 */
export function describeValidationError(err: FastifyError): string {
  const first = err.validation?.[0]
  if (!first) return err.message
  const params = (first.params ?? {}) as Record<string, unknown>
  const path = (first.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.')
  const where = err.validationContext === 'body' || !err.validationContext ? '' : ` in ${err.validationContext}`
  if (first.keyword === 'additionalProperties') {
    const field = [path, params.additionalProperty].filter(Boolean).join('.')
    return `unknown field '${field}'${where}`
  }
  if (first.keyword === 'required') {
    const field = [path, params.missingProperty].filter(Boolean).join('.')
    return `missing field '${field}'${where}`
  }
  if (!path) return `${err.validationContext ?? 'body'} ${first.message ?? 'is invalid'}`
  return `field '${path}'${where} ${first.message ?? 'is invalid'}`
}
