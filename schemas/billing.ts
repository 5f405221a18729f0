import { Type } from '@sinclair/typebox'
import { Cursor, CursorPage, Limit, Nullable, Timestamp, Uuid } from './common.js'

export const WebhookReceived = Type.Object({ received: Type.Literal(true) })

/** Providers append their own parameters (session ids, tokens): extra query fields are allowed here. */
/** Providers add their own parameters to the return URL: unknown ones are ignored (config.providerFacing). */
export const ReturnQuery = Type.Object({ status: Type.Optional(Type.String({ maxLength: 100 })) })

export const Subscription = Type.Object({
  status: Type.Union([Type.Literal('none'), Type.Literal('active'), Type.Literal('past_due'), Type.Literal('canceled')]),
  provider: Nullable(Type.String()),
  plan: Nullable(Type.String()),
  currentPeriodEnd: Nullable(Timestamp),
  updatedAt: Nullable(Timestamp),
})

export const Payment = Type.Object({
  id: Uuid,
  provider: Type.Union([Type.Literal('provider-a'), Type.Literal('provider-b')]),
  kind: Type.Union([Type.Literal('payment'), Type.Literal('refund'), Type.Literal('failure')]),
  amount: Type.Integer({ description: "Minor units of the currency (provider B's \"19.99\" USD is 1999)" }),
  currency: Type.String({ pattern: '^[A-Z]{3}$' }),
  providerObjectId: Type.String(),
  occurredAt: Timestamp,
})

export const PaymentsQuery = Type.Object({ limit: Limit, cursor: Type.Optional(Cursor) }, { additionalProperties: false })
export const PaymentsPage = CursorPage(Payment)
