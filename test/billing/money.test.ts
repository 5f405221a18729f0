import fc from 'fast-check'
import t from 'tap'
import { toMinorUnits } from '../../src/billing/money.js'

t.test('decimal strings become exact minor units', async (t) => {
  const cases: [unknown, string, number][] = [
    ['19.99', 'USD', 1999],
    ['0.10', 'USD', 10],
    ['0.3', 'USD', 30],
    ['1', 'USD', 100],
    ['1000', 'JPY', 1000],
    ['1000.00', 'JPY', 1000],
    ['1.5', 'KWD', 1500],
    ['1.234', 'BHD', 1234],
    ['-5.00', 'USD', -500],
    [19.99, 'USD', 1999],
    [1.0, 'USD', 100],
    ['4503599627370.49', 'USD', 450359962737049],
  ]
  for (const [value, currency, expected] of cases) t.equal(toMinorUnits(value, currency), expected, `${value} ${currency}`)
  for (const [value, currency] of [['19.999', 'USD'], ['1000.5', 'JPY'], ['1e3', 'USD'], ['', 'USD'], ['1,00', 'EUR'], [null, 'USD'], ['99999999999999999', 'USD']] as [unknown, string][]) {
    t.throws(() => toMinorUnits(value, currency), { name: 'InvalidAmountError' }, `${value} ${currency} refused`)
  }
})

t.test('any cents amount round-trips without float error', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (cents) => {
      const text = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`
      return toMinorUnits(text, 'USD') === cents
    }),
  )
  t.pass('property holds')
})
