/**
 * What a UUID looks like, in code (any version, either case). Schemas say the same with `Uuid`
 * (schemas/common.ts, Ajv's uuid format); a path `:id` is checked here instead, so a malformed
 * id is a 404 like an unknown one, never a 400.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value)
}
