import { createHmac } from 'node:crypto'
import type { Area } from '../lib/area.js'

/** Provider A webhooks: a distinct signed invoice.paid event per request, for random customers. */
export const billing: Area = {
  name: 'billing',
  ids: [{ id: 'webhook-a', about: '`POST /billing/webhooks/provider-a`, a distinct signed `invoice.paid` event per request' }],
  async prepare({ seed, secrets, runTag }) {
    const workspaces = [...seed.workspaces.map((w) => w.id), ...(seed.billingOnlyWorkspaces ?? [])]
    let seq = 0
    return {
      scenarios: [
        {
          id: 'webhook-a',
          label: 'POST /billing/webhooks/provider-a',
          kind: 'write',
          method: 'POST',
          path: '/billing/webhooks/provider-a',
          headers: { 'content-type': 'application/json' },
          vary: (req) => {
            const n = ++seq
            const t = Math.floor(Date.now() / 1000)
            // Events for random customers, as a provider sends them (50 concurrent events for one
            // workspace would all queue on its subscription row).
            const ws = workspaces[Math.floor(Math.random() * workspaces.length)]
            const body = JSON.stringify({
              id: `evt_bench_${runTag}_${n}`,
              type: 'invoice.paid',
              created: t,
              data: {
                object: {
                  id: `in_bench_${runTag}_${n}`,
                  object: 'invoice',
                  amount_paid: 1999,
                  currency: 'usd',
                  customer: 'cus_bench',
                  subscription: `sub_bench_${ws.slice(0, 8)}`,
                  metadata: { workspaceId: ws },
                },
              },
            })
            const sig = createHmac('sha256', secrets.PROVIDER_A_WEBHOOK_SECRET).update(`${t}.${body}`).digest('hex')
            return { ...req, body, headers: { ...req.headers, 'provider-a-signature': `t=${t},v1=${sig}` } }
          },
        },
      ],
    }
  },
}
