import t from 'tap'
import { CursorCodec } from '../../src/cursor.js'

t.test('cursors: round trip, bound to params, any altered character refused', async (t) => {
  const codec = new CursorCodec('a-test-secret-of-some-length')
  const params = { list: 'x', sortBy: 'createdAt', workspaceId: 'w1' }
  const key = ['2026-11-21 10:00:00.123456+00', 'id-1']
  const cursor = codec.encode(params, key)
  t.same(codec.decode(cursor, { ...params }), key)
  t.throws(() => codec.decode(cursor, { ...params, sortBy: 'updatedAt' }), { code: 'INVALID_CURSOR' })
  t.throws(() => codec.decode(cursor, { ...params, extra: 'filter' }), { code: 'INVALID_CURSOR' })
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  let refused = 0
  for (let i = 0; i < cursor.length; i++) {
    if (cursor[i] === '.') continue
    const other = alphabet[(alphabet.indexOf(cursor[i]) + 1) % alphabet.length]
    const altered = cursor.slice(0, i) + other + cursor.slice(i + 1)
    try {
      codec.decode(altered, params)
    } catch (err) {
      if ((err as { code?: string }).code === 'INVALID_CURSOR') refused++
    }
  }
  t.equal(refused, cursor.length - 1, 'every single-character change is refused (the tag\'s spare bits included)')
  t.throws(() => new CursorCodec('another-secret-entirely').decode(cursor, params), { code: 'INVALID_CURSOR' })
})
