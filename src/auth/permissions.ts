import type { Role } from '../db/schema.js'

export type Permission =
  | 'conversations:read'
  | 'conversations:write'
  | 'conversations:assign'
  | 'conversations:delete'
  | 'conversations:reconcile'
  | 'members:read'
  | 'members:manage'
  | 'channels:manage'
  | 'billing:read'
  | 'billing:manage'
  | 'workspace:manage'
  | 'canned:manage'
  | 'analytics:read'
  | 'visitors:read'
  | 'visitors:write'
  | 'labels:manage'
  | 'teams:manage'
  | 'sla:manage'

/** The contract's role table (API.md section 2). */
const GRANTS: Record<Role, ReadonlySet<Permission>> = {
  agent: new Set<Permission>(['conversations:read', 'conversations:write', 'conversations:assign', 'members:read', 'visitors:read', 'visitors:write']),
  admin: new Set<Permission>([
    'conversations:read', 'conversations:write', 'conversations:assign', 'conversations:delete', 'conversations:reconcile',
    'members:read', 'members:manage', 'channels:manage', 'billing:read', 'canned:manage', 'analytics:read', 'visitors:read', 'visitors:write',
    'labels:manage',
    'teams:manage',
    'sla:manage',
  ]),
  owner: new Set<Permission>([
    'conversations:read', 'conversations:write', 'conversations:assign', 'conversations:delete', 'conversations:reconcile',
    'members:read', 'members:manage', 'channels:manage', 'billing:read', 'billing:manage', 'workspace:manage',
    'canned:manage', 'analytics:read', 'visitors:read', 'visitors:write', 'labels:manage', 'teams:manage',
    'sla:manage',
  ]),
}

export function can(role: Role, permission: Permission): boolean {
  return GRANTS[role]?.has(permission) ?? false
}
