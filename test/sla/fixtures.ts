import type { App } from '../../src/app.js'
import type { SeededWorkspace } from '../helper.js'

/** Creates an SLA policy as the workspace's admin; fails the test setup unless 201. */
export async function createPolicy(app: App, ws: SeededWorkspace, body: Record<string, unknown>): Promise<any> {
  const res = await app.inject({ method: 'POST', url: '/sla-policies', headers: ws.admin.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`policy create failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

export async function getConversation(app: App, ws: SeededWorkspace, id: string): Promise<any> {
  const res = await app.inject({ method: 'GET', url: `/conversations/${id}`, headers: ws.agent.headers })
  if (res.statusCode !== 200) throw new Error(`get failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
export const MINUTE = 60_000
