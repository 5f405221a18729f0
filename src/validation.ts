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

/**
 * The path of the first string holding a NUL character, or null. PostgreSQL text cannot store
 * NUL, so such input is refused up front as a 400 instead of failing in the database as a 500.
 */
export function findNul(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path || 'body' : null
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findNul(value[i], `${path}[${i}]`)
      if (hit) return hit
    }
    return null
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const hit = findNul(v, path ? `${path}.${k}` : k)
      if (hit) return hit
    }
  }
  return null
}
