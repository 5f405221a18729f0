import AjvCompiler from '@fastify/ajv-compiler'
import type { FastifyError, RouteOptions } from 'fastify'

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

/** Arrays and objects may nest this deep in a JSON body (API.md section 1); deeper is a 400. */
export const MAX_JSON_DEPTH = 32
/**
 * Array elements plus object members a JSON body may hold in all. JSON.parse spends its time
 * allocating values, not reading bytes: 1 MiB of `[{},{},...]` or of a 90,000-key object costs
 * it ~100 ms, while a 1 MiB string costs ~1 ms. No Parley body comes near this many values, and
 * with the cap a body at the size limit costs a few milliseconds whatever its shape.
 */
export const MAX_JSON_ITEMS = 10_000

export interface JsonTextScan {
  /** Why the body is refused before parsing (depth or item count), else null. */
  refusal: string | null
  /** A string or key holds the escape for NUL (a raw NUL byte is not valid JSON at all). */
  hasNul: boolean
}

/**
 * One pass over JSON text, before JSON.parse: nesting depth and item count (brackets and commas
 * inside strings ignored), and whether any string holds `\u0000`. No recursion and no parsing,
 * so a 400,000-level body costs a scan of its bytes instead of a stack overflow later, and the
 * parsed value is walked for a NUL's path only when the text has one. Malformed text is left for
 * JSON.parse to refuse.
 */
export function scanJsonText(text: string, limits = { depth: MAX_JSON_DEPTH, items: MAX_JSON_ITEMS }): JsonTextScan {
  let depth = 0
  // Commas plus opened containers: at least the number of elements and members, at most one more per container.
  let items = 0
  let inString = false
  let hasNul = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) {
        // backslash: the next character is escaped, whatever it is; \u0000 is NUL
        if (text.charCodeAt(i + 1) === 0x75 && text.startsWith('0000', i + 2)) hasNul = true
        i++
      } else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x2c) {
      if (++items > limits.items) return { refusal: `body holds more than ${limits.items} values`, hasNul }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limits.depth) return { refusal: `body is nested deeper than ${limits.depth} levels`, hasNul }
      if (++items > limits.items) return { refusal: `body holds more than ${limits.items} values`, hasNul }
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return { refusal: null, hasNul }
}

/**
 * Plain data as JSON.parse, the query-string parser or the router builds it; anything else (a raw
 * Buffer, a stream) is not walked. The query-string parser and the router make their objects
 * from a class whose prototype has a null prototype (a "null object"), so that counts as plain.
 */
function isPlainContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  if (value === null || typeof value !== 'object') return false
  if (Array.isArray(value)) return true
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null
}

/**
 * The path of the first string holding a NUL character, or null. PostgreSQL text cannot store
 * NUL, so such input is refused up front as a 400 instead of failing in the database as a 500.
 *
 * Hostile input must cost time proportional to its size (API.md section 8): the walk keeps its
 * own stack instead of recursing (no stack overflow however deep), visits each value once,
 * builds a path only for the hit, and never walks raw bodies (a webhook's Buffer is bytes, not
 * fields: walking one visited a million indexes per MiB).
 */
export function findNul(value: unknown, rootName = 'body'): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? rootName : null
  if (!isPlainContainer(value)) return null
  // One frame per open container: its keys (objects) or length (arrays), and the next index.
  interface Frame {
    container: Record<string, unknown> | unknown[]
    keys: string[] | null
    next: number
  }
  const frames: Frame[] = [{ container: value, keys: Array.isArray(value) ? null : Object.keys(value), next: 0 }]
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]
    const size = frame.keys ? frame.keys.length : (frame.container as unknown[]).length
    if (frame.next >= size) {
      frames.pop()
      continue
    }
    const i = frame.next++
    // jsonb cannot store NUL in a key either.
    if (frame.keys && frame.keys[i].includes('\u0000')) return pathOf(frames, rootName)
    const child = frame.keys ? (frame.container as Record<string, unknown>)[frame.keys[i]] : (frame.container as unknown[])[i]
    if (typeof child === 'string') {
      if (child.includes('\u0000')) return pathOf(frames, rootName)
    } else if (isPlainContainer(child)) {
      frames.push({ container: child, keys: Array.isArray(child) ? null : Object.keys(child), next: 0 })
    }
  }
  return null
}

/** 'items[2].name' for the frames of a walk (each frame's last visited index is on the path). */
function pathOf(frames: { keys: string[] | null; next: number }[], rootName: string): string {
  let path = ''
  for (const f of frames) {
    const i = f.next - 1
    path += f.keys ? (path ? `.${f.keys[i]}` : f.keys[i]) : `[${i}]`
  }
  return path || rootName
}


type AjvCompilerOptions = NonNullable<Parameters<AjvCompiler.BuildCompilerFromPool>[1]>

/**
 * Fastify's validator factory with one Ajv per kind of input (API.md section 1): query strings,
 * path parameters and headers are text, so `?limit=5` may become the integer 5 (and a single
 * value an array); bodies are JSON, already typed, and are never coerced, so `{"body": 12345}`
 * or `{"body": ["hi"]}` where a string is expected is a 400, not the string "12345" or "hi".
 * Given to Fastify as `schemaController.compilersFactory.buildValidator`; the other Ajv options
 * come from the server's `ajv` option as usual.
 */
export function validatorPerHttpPart(): AjvCompiler.BuildCompilerFromPool {
  const pool = AjvCompiler()
  return (externalSchemas, options) => {
    const base = (options ?? {}) as AjvCompilerOptions
    const text = pool(externalSchemas, { ...base, customOptions: { ...base.customOptions, coerceTypes: 'array' } } as AjvCompilerOptions)
    const json = pool(externalSchemas, { ...base, customOptions: { ...base.customOptions, coerceTypes: false } } as AjvCompilerOptions)
    // Fastify calls the compiler with its route definition ({ schema, httpPart, ... }), which the
    // package's types flatten to the schema alone.
    return ((route: { httpPart?: string }) =>
      route.httpPart === 'body' ? json(route as never) : finiteNumbersOnly(text(route as never) as AjvValidate)) as ReturnType<AjvCompiler.BuildCompilerFromPool>
  }
}

type AjvValidate = ((data: unknown, ctx?: unknown) => boolean) & { errors?: unknown[] | null; schemaEnv?: unknown }

/**
 * Ajv coerces the text "1e309" to Infinity for an integer or number and then skips `maximum`
 * (its range checks only look at finite numbers), so `?limit=1e309` passed validation and reached
 * SQL as LIMIT Infinity (a 500; found by the fuzz sweep). Text parts are flat, so after Ajv's own
 * checks any coerced value that is not a finite number is refused like a type error.
 */
function finiteNumbersOnly(validate: AjvValidate): AjvValidate {
  const wrapped: AjvValidate = (data, ctx) => {
    if (!validate(data, ctx)) {
      wrapped.errors = validate.errors
      return false
    }
    for (const [key, value] of Object.entries((data ?? {}) as Record<string, unknown>)) {
      const values = Array.isArray(value) ? value : [value]
      if (values.some((v) => typeof v === 'number' && !Number.isFinite(v))) {
        wrapped.errors = [{ instancePath: `/${key}`, schemaPath: '#', keyword: 'type', params: {}, message: 'must be a finite number' }]
        return false
      }
    }
    wrapped.errors = null
    return true
  }
  // Fastify passes Ajv's parent-data context (needed to coerce a root value) when this is set.
  wrapped.schemaEnv = validate.schemaEnv
  return wrapped
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A route a payment provider calls, or redirects a browser to (webhooks, billing return
     * routes): unknown query parameters are ignored there, because providers add their own.
     */
    providerFacing?: boolean
  }
}

/** The querystring of a route that takes no query parameters: any parameter is unknown. */
const NO_QUERY = { type: 'object', properties: {}, additionalProperties: false } as const

/**
 * Unknown query parameters are a 400 on every route alike (API.md section 1), except
 * provider-facing ones. Run for every route as it is declared (an onRoute hook): a route without
 * a querystring schema gets one that admits nothing, and a querystring schema that would let
 * unknown parameters through stops the app at start-up, so a new list cannot forget the rule.
 * The docs pages and CORS preflights (which carry the real request's query) are not ours.
 */
export function applyQuerystringPolicy(route: RouteOptions): void {
  const methods = [route.method].flat()
  if (route.url.startsWith('/docs') || methods.includes('OPTIONS')) return
  const querystring = route.schema?.querystring as { additionalProperties?: unknown } | undefined
  const name = `${methods.join(',')} ${route.url}`
  if (route.config?.providerFacing) {
    if (querystring?.additionalProperties === false) {
      throw new Error(`route ${name} is provider-facing: its querystring schema must not refuse unknown parameters`)
    }
    return
  }
  if (!querystring) {
    route.schema = { ...route.schema, querystring: NO_QUERY }
    return
  }
  if (querystring.additionalProperties !== false) {
    throw new Error(`route ${name}: its querystring schema must set additionalProperties: false (or the route declares config.providerFacing)`)
  }
}
