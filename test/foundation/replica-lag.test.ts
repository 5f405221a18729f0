// How src/db/replica.ts measures a replica's lag against the primary's sampled WAL positions
// (docs/scaling.md); the engine suite test/engines/replica.test.ts shows it on real servers.
import t from 'tap'
import { lagMs, parseLsn } from '../../src/db/replica.js'

t.test('LSNs compare as 64-bit positions', async (t) => {
  t.equal(parseLsn('0/16B3748'), 0x16b3748n)
  t.equal(parseLsn('1/0'), 1n << 32n)
  t.ok(parseLsn('1/0') > parseLsn('0/FFFFFFFF'), 'the high word counts first')
})

t.test('lag is the age of the oldest write the replica has not replayed', async (t) => {
  const samples = [
    { at: 1_000, lsn: 100n },
    { at: 2_000, lsn: 200n },
    { at: 3_000, lsn: 300n },
  ]
  t.equal(lagMs(samples, 300n, 10_000), 0, 'caught up: no lag however old the last write')
  t.equal(lagMs(samples, 350n, 10_000), 0, 'past the last sample: no lag')
  t.equal(lagMs(samples, 250n, 10_000), 7_000, 'behind the write sampled at 3 s')
  t.equal(lagMs(samples, 150n, 10_000), 8_000, 'behind the write sampled at 2 s')
  t.equal(lagMs(samples, 50n, 10_000), 9_000)
  t.equal(lagMs([], 0n, 10_000), 0, 'no sample yet: nothing known to be missing')
})
