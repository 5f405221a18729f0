import type { Area } from '../lib/area.js'

export const health: Area = {
  name: 'health',
  ids: [{ id: 'health', about: '`GET /health`' }],
  async prepare() {
    return { scenarios: [{ id: 'health', label: 'GET /health', kind: 'read', method: 'GET', path: '/health' }] }
  },
}
