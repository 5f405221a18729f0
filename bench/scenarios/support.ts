import { resultOf, type Area } from '../lib/area.js'
import { target } from '../lib/report.js'

/**
 * GET /support/widget/:channelId: the widget asks on every page load of every customer site. The
 * largest workspace's three channels in turn, one with office hours in a daylight-saving zone (the
 * Intl path). Target: p50 under 5 ms at the run's connections (50 by default).
 */
export const support: Area = {
  name: 'support',
  ids: [
    { id: 'widget-config', about: '`GET /support/widget/:channelId`, the largest workspace\'s 3 channels in turn (one with office hours)' },
  ],
  async prepare({ sql, seed }) {
    const channels = seed.largest.channels
    await sql`
      UPDATE channels SET widget = ${JSON.stringify({
        greeting: 'Hi! How can we help?',
        csatEnabled: true,
        officeHours: { timezone: 'Europe/Paris', days: { mon: [['09:00', '17:00']], tue: [['09:00', '17:00']], wed: [['09:00', '12:00'], ['13:00', '17:00']] } },
      })}::jsonb
      WHERE id = ${channels[0]}`
    let i = 0
    const pick = () => channels[i++ % channels.length]
    return {
      scenarios: [
        {
          id: 'widget-config',
          label: 'GET /support/widget/:channelId',
          kind: 'read',
          method: 'GET',
          path: `/support/widget/${channels[0]}`,
          vary: (req) => ({ ...req, path: `/support/widget/${pick()}` }),
        },
      ],
      targets: (results) => [target('widget-config p50', resultOf(results, 'widget-config')?.p50, '<', 5, ' ms')],
    }
  },
}
