import { Type, type Static } from '@sinclair/typebox'
import { billingProviders, paymentKinds, subscriptionStatuses } from '../src/db/vocabulary.js'
import { Cursor, CursorPage, Limit, Literals, Nullable, Timestamp, Uuid } from './common.js'

export const WebhookReceived = Type.Object({ received: Type.Literal(true) })

/** Read as raw bytes by the webhook routes: the signature covers them exactly. */
export const WebhookBody = Type.Unsafe<Buffer>({ description: "The provider's JSON event, exactly as sent (the signature covers these bytes)" })

/** Providers append their own parameters (session ids, tokens): extra query fields are allowed here. */
/** Providers add their own parameters to the return URL: unknown ones are ignored (config.providerFacing). */
export const ReturnQuery = Type.Object({ status: Type.Optional(Type.String({ maxLength: 100 })) })

export const Subscription = Type.Object({
  status: Literals(subscriptionStatuses),
  provider: Nullable(Type.String()),
  plan: Nullable(Type.String()),
  currentPeriodEnd: Nullable(Timestamp),
  updatedAt: Nullable(Timestamp),
})
export type SubscriptionView = Static<typeof Subscription>

export const Payment = Type.Object({
  id: Uuid,
  provider: Literals(billingProviders),
  kind: Literals(paymentKinds),
  amount: Type.Integer({ description: "Minor units of the currency (provider B's \"19.99\" USD is 1999)" }),
  currency: Type.String({ pattern: '^[A-Z]{3}$' }),
  providerObjectId: Type.String(),
  occurredAt: Timestamp,
})
export type PaymentView = Static<typeof Payment>

export const PaymentsQuery = Type.Object({ limit: Limit, cursor: Type.Optional(Cursor) }, { additionalProperties: false })
export const PaymentsPage = CursorPage(Payment)
