/**
 * Amounts in integer minor units, parsed exactly from the providers' decimal strings (never
 * through a float: 0.1 + 0.2 style rounding would put a wrong cent in the ledger).
 */

/** ISO 4217 currencies whose minor unit is not 1/100. Every other code has two decimals. */
const EXPONENTS: Record<string, number> = {
  // zero-decimal
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0,
  UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  // three-decimal
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  // four-decimal
  CLF: 4, UYW: 4,
}

export class InvalidAmountError extends Error {
  override name = 'InvalidAmountError'
}

export function currencyExponent(currency: string): number {
  return EXPONENTS[currency] ?? 2
}

/** Upper-case ISO 4217 code, or an error for anything that is not three letters. */
export function normaliseCurrency(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z]{3}$/.test(value)) throw new InvalidAmountError('currency must be a 3-letter ISO 4217 code')
  return value.toUpperCase()
}

/**
 * "19.99" USD -> 1999, "1000" JPY -> 1000, "1.5" KWD -> 1500. A number is read through its
 * shortest round-trip decimal text (what the JSON had for any realistic amount). More decimals
 * than the currency has are refused unless they are zeros ("1000.00" JPY is fine). A leading
 * minus is kept; callers decide what a sign means.
 */
export function toMinorUnits(value: unknown, currency: string): number {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value
  if (typeof text !== 'string') throw new InvalidAmountError('amount must be a decimal string')
  const m = /^(-)?(\d{1,18})(?:\.(\d{1,18}))?$/.exec(text.trim())
  if (!m) throw new InvalidAmountError('amount must be a decimal string')
  const [, minus, whole, frac = ''] = m
  const exp = currencyExponent(currency)
  if (frac.length > exp && /[^0]/.test(frac.slice(exp))) {
    throw new InvalidAmountError(`amount has more decimals than ${currency} allows`)
  }
  const digits = BigInt(whole + frac.slice(0, exp).padEnd(exp, '0'))
  if (digits > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidAmountError('amount is too large')
  const n = Number(digits)
  return minus && n !== 0 ? -n : n
}

/** Provider A sends integers that already are minor units. */
export function integerMinorUnits(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new InvalidAmountError('amount must be an integer')
  return value
}
