/**
 * The audit entries of HTTP writes (docs/accounts.md#audit-log): a handler's change and its entry
 * run in one `Transactor.withTransaction`, so both are kept or neither. The actor is the request's
 * credential (the operator on admin routes), the address the request's client.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Audit, type Credentials, type Domain, Ids, Ports } from "@streaks/core"
import { Effect, Option } from "effect"
import { CurrentPrincipal } from "./Api.js"
import * as ClientAddress from "./ClientAddress.js"

/** The operator, as the audit log names them: the admin token has no id of its own. */
export const operator: Domain.Actor = { kind: "admin", id: "admin" }

/** How a customer credential appears as an actor: a session as its user. */
export const actorOf = (principal: Credentials.Principal): Domain.Actor =>
  principal.kind === "session"
    ? { kind: "user", id: principal.credential.id }
    : { kind: principal.kind, id: principal.credential.id }

export const byOperator: Effect.Effect<Audit.By, never, HttpServerRequest.HttpServerRequest> = Effect.map(
  ClientAddress.current,
  (client) => ({ actor: operator, clientAddress: client.address })
)

export const byPrincipal: Effect.Effect<Audit.By, never, HttpServerRequest.HttpServerRequest | CurrentPrincipal> =
  Effect.zipWith(CurrentPrincipal, ClientAddress.current, (principal, client) => ({
    actor: actorOf(principal),
    clientAddress: client.address
  }))

/** The workspace of a program, for an entry about it (None for an unknown id). */
export const workspaceOfProgram = (programId: string) =>
  Effect.gen(function*() {
    const directory = yield* Ports.DirectoryStore
    const program = yield* directory.program(Ids.unsafe("ProgramId", programId))
    if (Option.isNone(program)) return undefined
    const project = yield* directory.project(program.value.projectId)
    return Option.isNone(project) ? undefined : project.value.workspaceId
  })

/** `Audit.audited` with the writer `by` works out (the request's credential and client). */
export const audited = <A, E, R, R2>(
  by: Effect.Effect<Audit.By, never, R2>,
  change: (a: NoInfer<A>) => Audit.Change | ReadonlyArray<Audit.Change>,
  self: Effect.Effect<A, E, R>
) => Effect.flatMap(by, (who) => Audit.audited(who, change, self))
