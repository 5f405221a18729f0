import { Type, type Static } from '@sinclair/typebox'
import { Literals, Timestamp } from './common.js'

const DependencyState = Literals(['online', 'offline'])

export const Health = Type.Object({
  status: Literals(['ok', 'error']),
  redis: DependencyState,
  database: DependencyState,
  timestamp: Timestamp,
})
export type HealthView = Static<typeof Health>
