import { Type } from '@sinclair/typebox'
import t from 'tap'
import { Conversation, ConversationPage } from '../../schemas/conversations.js'
import { Literals, Nullable, Timestamp } from '../../schemas/common.js'
import { defaultSerializerFactory, forSerialization, serializerWithNativeNullable } from '../../src/serialization.js'

// src/serialization.ts: responses are written from a copy of their schema whose nullable fields
// and vocabularies fast-json-stringify checks without Ajv; the bytes must not change.

const uuid = (n: number) => `0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a${String(n).padStart(2, '0')}`

/** A conversation as the lists show it, with every nullable field null or set by `i`. */
function conversation(i: number) {
  const set = i % 2 === 0
  return {
    id: uuid(i), workspaceId: uuid(90), channelId: uuid(91), guestId: uuid(92),
    guest: { id: uuid(92), name: `Guest "${i}" \u00e9\n`, email: set ? 'g@example.com' : null },
    status: (['OPEN', 'PENDING', 'SNOOZED', 'RESOLVED', 'CLOSED'] as const)[i % 5]!, pinned: i < 2,
    assignedAgentId: set ? `user|${i}` : null, assignedAgent: set ? { userId: `user|${i}`, name: 'Agent' } : null,
    seen: !set, unreadCount: i, lastMessageAt: '2026-11-24T10:00:00.123Z', lastMessagePreview: set ? 'about my order' : null,
    createdAt: '2026-11-20T10:00:00.000Z', updatedAt: '2026-11-24T10:00:00.123Z', closedAt: set ? null : '2026-11-24T11:00:00.000Z',
    labels: set ? [{ id: uuid(93), name: 'vip', color: '#ff0000' }] : [], priority: set ? null : ('urgent' as const),
    snoozedUntil: null, teamId: set ? uuid(94) : null, team: set ? { id: uuid(94), name: 'Support' } : null, queuedAt: null,
    ...(i % 3 === 0 ? { queue: set ? { position: 2, estimatedWaitSeconds: null } : null } : {}),
    sla: set
      ? { policyId: uuid(95), policyName: 'Std', firstResponseDueAt: '2026-11-25T10:00:00.000Z', nextResponseDueAt: null, resolutionDueAt: null, status: 'BREACHED' as const, breaches: ['FIRST_RESPONSE' as const] }
      : null,
    subject: set ? 'Re: order' : null,
  }
}

t.test('the serialization copy writes the same bytes as the schema itself', async (t) => {
  const fastify = defaultSerializerFactory()()(undefined, {})
  const ours = serializerWithNativeNullable()(undefined, {})
  for (const [name, schema, value] of [
    ['a list page', ConversationPage, { data: Array.from({ length: 8 }, (_, i) => conversation(i)), nextCursor: null }],
    ['a list page with a cursor', ConversationPage, { data: [conversation(3)], nextCursor: 'abc' }],
    ['one conversation', Conversation, conversation(4)],
  ] as const) {
    const a = fastify({ schema })(value)
    t.equal(ours({ schema })(value), a, name)
    t.same(JSON.parse(a), value, `${name}: every field written`)
  }
})

t.test('nullable fields and vocabularies become type lists; anything else is left alone', async (t) => {
  t.same(forSerialization(Nullable(Type.String())), { type: ['string', 'null'] })
  t.same(forSerialization(Nullable(Timestamp)), { type: ['string', 'null'], format: 'date-time' })
  t.same(forSerialization(Nullable(Type.Object({ a: Type.Integer() }))), { type: ['object', 'null'], properties: { a: { type: 'integer' } }, required: ['a'] })
  t.same(forSerialization(Literals(['a', 'b'], { description: 'd' })), { description: 'd', type: 'string' })
  t.same(forSerialization(Nullable(Literals(['a', 'b']))), { type: ['string', 'null'] }, 'a nullable vocabulary: the inner union, then the outer')
  const mixed = Type.Union([Type.String(), Type.Integer()])
  t.same(forSerialization(mixed), { anyOf: [{ type: 'string' }, { type: 'integer' }] }, 'a union of two types still picks by validation')
  const ref = { anyOf: [{ $ref: 'X' }, { type: 'null' }] }
  t.same(forSerialization(ref), ref, 'a $ref branch is left to fast-json-stringify')
})
