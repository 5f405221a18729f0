import { Type, type TSchema } from '@sinclair/typebox'

/** Shared TypeBox pieces. Routes import these objects directly (no $ref), which keeps inference. */

export const ErrorResponse = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    code: Type.String(),
    message: Type.String(),
  },
  { $id: 'ErrorResponse', description: 'Every 4xx and 5xx answer' },
)

export const Uuid = Type.String({ format: 'uuid' })

/** A union of string literals from one of the vocabularies of src/db/schema.ts. */
export const Literals = <T extends string>(values: readonly T[], options: { default?: T; description?: string } = {}) =>
  Type.Union(values.map((v) => Type.Literal(v)), options)

/** The body of a POST, PUT, PATCH or DELETE route that takes none: nothing, null or {} (plugins/input.ts). */
export const NoBody = Type.Object({}, { additionalProperties: false, description: 'No body (nothing, null or {})' })

/** Every `:id` path parameter: any string, so a malformed id is a 404 from the domain (isUuid), like an unknown one. */
export const IdParams = Type.Object({ id: Type.String() })
export const Timestamp = Type.String({ format: 'date-time' })
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** A member's userId: the identity provider's `sub`. */
export const UserId = Type.String({ minLength: 1, maxLength: 255 })
export const Name = Type.String({ minLength: 1, maxLength: 200 })
export const Email = Type.String({ format: 'email', maxLength: 254 })

export const Limit = Type.Integer({ minimum: 1, maximum: 100, default: 20 })
export const Cursor = Type.String({ minLength: 1, maxLength: 2000 })

export const CursorPage = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), nextCursor: Nullable(Type.String()) })

/** Error answers every authenticated route may give, for the OpenAPI document and serialisation. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, ErrorResponse])) as Record<number, typeof ErrorResponse>
