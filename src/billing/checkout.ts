import type { Ctx } from '../context.js'
import type { BillingProvider } from '../db/schema.js'

/**
 * Where a browser returning from a provider's checkout goes: <APP_URL>/billing (keeping any path
 * APP_URL has: the app may live under one) with the provider and the outcome. Only a redirect,
 * never a state change (webhooks are the source of truth); any status but "success" is
 * "cancel", so no caller-supplied text is ever reflected into the redirect.
 */
export function checkoutReturnUrl(ctx: Ctx, provider: BillingProvider, status: string | undefined): string {
  const outcome = status === 'success' ? 'success' : 'cancel'
  return `${ctx.config.APP_URL.replace(/\/+$/, '')}/billing?${new URLSearchParams({ provider, status: outcome })}`
}
