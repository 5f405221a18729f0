/** A visitor's attributes (API.md section 13): flat, at most 50 keys, scalar values. */
export type AttributeMap = Record<string, string | number | boolean>

export const ATTRIBUTES_MAX = 50

/**
 * The stored attributes after a PATCH: named keys replaced, `null` removing a key. Built on a
 * null-prototype object so no key (`__proto__`, `constructor`) is special.
 */
export function mergeAttributes(stored: AttributeMap, patch: Record<string, string | number | boolean | null>): AttributeMap {
  const out: AttributeMap = Object.assign(Object.create(null), stored)
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key]
    else out[key] = value
  }
  return { ...out }
}
