import SerializerSelector from '@fastify/fast-json-stringify-compiler'

/**
 * Fastify's own response serializer (fast-json-stringify, through the compiler Fastify uses by
 * default, declared in package.json at the version Fastify depends on), handed a serialization copy of each response schema.
 *
 * Why: the schemas say "nullable" as `anyOf: [X, null]` (`Nullable`) and a vocabulary as
 * `anyOf` of string constants (`Literals`), which is what validation and the OpenAPI document
 * want. fast-json-stringify serializes an `anyOf` by running Ajv on the value against each branch
 * until one matches, per value: a conversation list page (20 rows, ~15 such fields each) took
 * 173 µs to serialize, against 52 µs with the same schema written as `type: [X, 'null']`, which it
 * checks with `=== null` (docs/lists.md, "Serialization"). The copy says exactly that:
 * - `anyOf: [X, {type: 'null'}]` with X of one `type` (no `anyOf`, no `$ref`) -> X with
 *   `type: [X.type, 'null']`;
 * - `anyOf` of string constants (and maybe null) -> `type: 'string'` (or `['string', 'null']`):
 *   the serializer writes the string; which strings are allowed is the type system's and the
 *   validator's business, not the writer's.
 * The bytes written are the same (test/foundation/serialization.test.ts). Request validation and
 * the OpenAPI document keep the original schemas.
 */
export function serializerWithNativeNullable(): BuildSerializer {
  const fastifyDefault = defaultSerializerFactory()()
  return (externalSchemas, options) => {
    const compile = fastifyDefault(forSerialization(externalSchemas), options)
    return (route) => compile({ ...route, schema: forSerialization(route.schema) })
  }
}

type RouteSchema = { schema?: unknown; method?: string; url?: string; httpStatus?: string; contentType?: string }
type BuildSerializer = (externalSchemas: unknown, options: unknown) => (route: RouteSchema) => (data: unknown) => string

/** The serializer factory Fastify uses by default (@fastify/fast-json-stringify-compiler). */
export function defaultSerializerFactory(): () => BuildSerializer {
  return SerializerSelector as unknown as () => BuildSerializer
}

type Json = { [key: string]: unknown }

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v)

/** A copy of a JSON schema with the `anyOf`s above rewritten (symbol keys, TypeBox's, dropped). */
export function forSerialization(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forSerialization)
  if (!isObject(node)) return node
  const out: Json = {}
  for (const [key, value] of Object.entries(node)) out[key] = forSerialization(value)
  const branches = out.anyOf
  if (!Array.isArray(branches) || !branches.every(isObject)) return out
  const nonNull = branches.filter((b) => b.type !== 'null')
  const nullable = nonNull.length === branches.length - 1
  const { anyOf: _, ...siblings } = out
  if (nonNull.length > 0 && nonNull.every((b) => typeof b.const === 'string' && Object.keys(b).every((k) => k === 'const' || k === 'type'))) {
    return { ...siblings, type: nullable ? ['string', 'null'] : 'string' }
  }
  const [only] = nonNull
  if (nullable && nonNull.length === 1 && only && typeof only.type === 'string' && only.type !== 'null' && !('anyOf' in only) && !('$ref' in only)) {
    return { ...siblings, ...only, type: [only.type, 'null'] }
  }
  return out
}
