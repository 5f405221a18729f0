import { Type, type Static } from '@sinclair/typebox'
import { Literals, Timestamp } from './common.js'

const DependencyState = Literals(['online', 'offline'])

export const Health = Type.Object({
  status: Literals(['ok', 'error']),
  /** `in-process`: single-process mode, no Redis to check (docs/deployment.md). */
  redis: Literals(['online', 'offline', 'in-process']),
  database: DependencyState,
  /** Only with DATABASE_READ_URL; never fails the probe (reads fall back to the primary). */
  replica: Type.Optional(Literals(['online', 'lagging', 'down'])),
  timestamp: Timestamp,
})
export type HealthView = Static<typeof Health>
