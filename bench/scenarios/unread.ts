import { fmtInt, step } from '../lib/progress.js'
import { ratio, resultOf, type Area } from '../lib/area.js'
import { target } from '../lib/report.js'

/** GET /conversations/unread-count in the largest and in the 10,000-conversation workspace: counters cost the same. */
export const unread: Area = {
  name: 'unread',
  ids: [{ id: 'unread-large', about: '`GET /conversations/unread-count` in the largest workspace' }, { id: 'unread-small', about: 'the same in the 10,000-conversation workspace' }],
  async prepare(run) {
    const { api, headers, seed } = run
    // The seeded counters must agree with the application's own recount of the same data.
    let seedCheck: { reconcile: string; before?: unknown; after?: unknown } = { reconcile: 'n/a (route missing)' }
    const res = await fetch(`${api.url}/conversations/counts/reconcile`, { headers: headers.small })
    const body = (await res.json().catch(() => ({}))) as { corrected?: boolean; code?: string; message?: string }
    if (res.status === 200) {
      seedCheck = { reconcile: body.corrected === false ? 'ok (corrected: false)' : 'DRIFT (corrected: true)', ...body }
      step(`seed check, reconcile on the small workspace: ${seedCheck.reconcile}`)
    } else if (!(res.status === 404 && body.code === 'NOT_FOUND')) {
      seedCheck = { reconcile: `error ${res.status} ${body.code ?? ''}` }
    }
    const count = (id: string, size: number, h: Record<string, string>) =>
      ({ id, label: `GET /conversations/unread-count (${fmtInt(size)} conv.)`, kind: 'read', method: 'GET', path: '/conversations/unread-count', headers: h, fixedWord: true }) as const
    return {
      scenarios: [count('unread-large', seed.largest.size, headers.largest), count('unread-small', seed.small.size, headers.small)],
      summary: [`seed check (reconcile on the small workspace): ${seedCheck.reconcile}`],
      targets: (results) => [
        target(
          `unread-count p50 ${fmtInt(seed.largest.size)} conv. ÷ ${fmtInt(seed.small.size)} conv.`,
          ratio(resultOf(results, 'unread-large')?.p50, resultOf(results, 'unread-small')?.p50),
          '<=',
          1.3,
        ),
      ],
      report: async () => ({ data: { seedCheck } }),
    }
  },
}
