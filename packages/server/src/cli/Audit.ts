/**
 * The CLI's changes go to the organisation's audit log as the console's do (admin/AuditLog.ts), by `cli`:
 * whoever has the shell and the database has no console identity to record. Only names, ids and settings
 * are passed, never a key, a secret or a credential.
 */
import { Effect } from "effect"
import { AuditLog, type AuditKind, CLI_ACTOR } from "../admin/AuditLog.js"

export { layer as AuditLogLive } from "../admin/AuditLog.js"

export const audited = (
  orgId: string,
  kind: AuditKind,
  subject: string | null,
  details: ReadonlyArray<readonly [string, string]> = []
) => Effect.flatMap(AuditLog, (log) => log.record({ orgId, actor: CLI_ACTOR, kind, subject, details }))
