/**
 * The operator on the command line as the audit log names them (docs/accounts.md#audit-log): the
 * commands that write run on the database with no request, so no credential and no address.
 */
import type { Audit } from "@streaks/core"

export const by: Audit.By = { actor: { kind: "admin", id: "cli" }, clientAddress: "cli" }
