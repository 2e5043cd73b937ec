/**
 * Credentials, the service: the customer REST credentials (`svc_api_…`, `svc_oat_…`) with the
 * programs they can reach (docs/api.md#customer-rest-api-v1api), and the operator-issued MCP
 * tokens (`svc_mcp_…`) that the MCP worker accepts beside them (docs/mcp.md#tokens). The token
 * rules it checks them with (formats, hashes, signed tokens) are the pure `Tokens` module,
 * re-exported here.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import type { CredentialRef, OAuthGrant, Program, Project, Workspace } from "./Domain.js"
import { NotFound, Unauthorized, type StorageError } from "./Errors.js"
import { McpTokenId, OAuthGrantId, type ProgramId, type WorkspaceId } from "./Ids.js"
import { CredentialStore, DirectoryStore, OAuthStore } from "./Ports.js"
import { hashToken, prefixes } from "./Tokens.js"

export {
  aliasClockSkewSeconds,
  generate,
  hashToken,
  matches,
  maxAliasTokenSeconds,
  prefixes,
  signAliasToken,
  signIdentityToken,
  type TokenKind,
  verifyAliasToken,
  verifyIdentityToken
} from "./Tokens.js"

// --- Customer REST credentials ----------------------------------------------------------------------

/** Who is calling the customer REST API, and which workspaces it reaches (docs/api.md#customer-rest-api-v1api). */
export interface Principal {
  /**
   * The credential itself: subscriptions it creates are removed when it is revoked. A session's is
   * its user (`{ type: "user", id: "usr_…" }`): what a person creates outlives their sign-out.
   */
  readonly credential: CredentialRef
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly kind: "api_key" | "oauth" | "session"
  /** Of `workspaceIds`, those reached read only (a viewer's, docs/accounts.md#users). */
  readonly readOnlyWorkspaceIds?: ReadonlyArray<WorkspaceId> | undefined
  /** The signed-in user, for a session. */
  readonly user?: { readonly id: string; readonly email: string } | undefined
}

/**
 * Who is calling the MCP worker (docs/mcp.md): a customer credential of `Principal`, or an
 * operator-issued MCP token (`mcp_token`, id `mcp_…`). It reaches programs as a `Principal` does.
 */
export interface McpPrincipal {
  readonly kind: "api_key" | "oauth" | "mcp_token"
  /** The credential's id (`key_…`, `oag_…` or `mcp_…`). */
  readonly id: string
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  /** Of `workspaceIds`, those reached read only (a consented grant whose user is a viewer there). */
  readonly readOnlyWorkspaceIds?: ReadonlyArray<WorkspaceId> | undefined
}

/** What decides a credential's reach: the workspaces it holds. */
export type Holder = Pick<Principal, "workspaceIds">

/** A program the principal can reach, with its project (the REST views need both). */
export interface Reach {
  readonly program: Program
  readonly project: Project
}

const notFound = new NotFound({ message: "program not found" })

/**
 * The program `programId` and its project if `principal` reaches it. Unknown ids, ids of another
 * kind and programs of other workspaces all give the same NotFound: existence is never revealed.
 */
export const reach = (
  principal: Holder,
  programId: string
): Effect.Effect<Reach, NotFound | StorageError, DirectoryStore> =>
  Effect.gen(function*() {
    const directory = yield* DirectoryStore
    const program = yield* directory.program(programId as ProgramId)
    if (Option.isNone(program)) return yield* notFound
    const project = yield* directory.project(program.value.projectId)
    if (Option.isNone(project) || !principal.workspaceIds.includes(project.value.workspaceId)) {
      return yield* notFound
    }
    return { program: program.value, project: project.value }
  })

/** An access token's last use is written again at most this often (docs/accounts.md#connected-apps). */
export const lastUseMillis = 60_000

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i

export class Credentials extends Context.Tag("@streaks/core/Credentials")<Credentials, {
  /**
   * The principal of an `Authorization: Bearer …` header. A missing or malformed header, an
   * unknown token and a revoked one all fail with Unauthorized; revocation takes effect at once
   * because every request looks the credential up again.
   */
  readonly authenticate: (
    authorizationHeader: string | undefined
  ) => Effect.Effect<Principal, Unauthorized | StorageError>
  /**
   * The caller of the MCP worker from its `Authorization: Bearer …` header: the two customer kinds
   * as `authenticate` takes them, and operator-issued `svc_mcp_…` tokens, which `authenticate`
   * refuses (they open the MCP worker only). Failures and revocation as for `authenticate`.
   */
  readonly authenticateMcp: (
    authorizationHeader: string | undefined
  ) => Effect.Effect<McpPrincipal, Unauthorized | StorageError>
  /** The program if the principal reaches it, else NotFound (whether or not it exists). */
  readonly reachableProgram: (principal: Holder, programId: string) => Effect.Effect<Program, NotFound | StorageError>
  /** Every program the principal reaches, with its project, in project then program order. */
  readonly reachablePrograms: (principal: Holder) => Effect.Effect<ReadonlyArray<Reach>, StorageError>
  /** The workspaces the principal reaches (for `GET /me`). */
  readonly workspaces: (principal: Principal) => Effect.Effect<ReadonlyArray<Workspace>, StorageError>
}>() {}

export const make = Effect.gen(function*() {
  const store = yield* CredentialStore
  const directory = yield* DirectoryStore
  const oauth = yield* OAuthStore
  const unauthorized = new Unauthorized({ message: "missing, unknown or revoked credential" })
  const isOAuthApp = Schema.is(OAuthGrantId)
  const isMcpToken = Schema.is(McpTokenId)

  const tokenOf = (header: string | undefined): string | undefined =>
    header === undefined ? undefined : bearer.exec(header)?.[1]

  /** The unrevoked grant of `token`, if it is of the kind `isKind` accepts by its id. */
  const grantOf = (token: string, isKind: (id: string) => boolean) =>
    Effect.flatMap(
      store.grantByHash(hashToken(token)),
      (grant) =>
        Option.isNone(grant) || grant.value.revokedAt !== undefined || !isKind(grant.value.id)
          ? Effect.fail(unauthorized)
          : Effect.succeed(grant.value)
    )

  /**
   * The grant of an access token issued by the authorization server (docs/oauth.md): the token
   * unrevoked and unexpired (by `Clock`), its grant unrevoked.
   */
  const consentedGrantOf = (token: string) =>
    Effect.gen(function*() {
      const found = yield* oauth.tokenByHash(hashToken(token))
      if (Option.isNone(found) || found.value.kind !== "access" || found.value.revokedAt !== undefined) {
        return yield* unauthorized
      }
      const nowMs = yield* Clock.currentTimeMillis
      if (found.value.expiresAt.getTime() <= nowMs) return yield* unauthorized
      const grant = yield* oauth.grant(found.value.grantId)
      if (Option.isNone(grant)) return yield* unauthorized
      const reach = yield* capped(grant.value)
      // The connected-apps list shows the last use; it is written at most once a minute per token, on
      // its own (no transaction), and a failure to write it never fails the request.
      const usedAt = found.value.usedAt?.getTime()
      if (usedAt === undefined || nowMs - usedAt >= lastUseMillis) {
        yield* Effect.ignore(oauth.touchToken(found.value.id, new Date(nowMs)))
      }
      return reach
    })

  /**
   * A consented grant's reach as its user's memberships stand now (docs/oauth.md#what-a-grant-reaches):
   * the consented workspaces the user still belongs to, those where the user is a viewer read
   * only. A grant whose user is gone, or belongs to none of them any more, reaches nothing.
   */
  const capped = (grant: OAuthGrant) =>
    Effect.gen(function*() {
      if (grant.userId === undefined) {
        return { id: grant.id, workspaceIds: grant.workspaceIds, readOnlyWorkspaceIds: [] }
      }
      const memberships = yield* oauth.memberships(grant.userId)
      if (Option.isNone(memberships)) return yield* unauthorized
      const roles = new Map(memberships.value.map((m) => [m.workspaceId, m.role]))
      const workspaceIds = grant.workspaceIds.filter((id) => roles.has(id))
      if (workspaceIds.length === 0) return yield* unauthorized
      return {
        id: grant.id,
        workspaceIds,
        readOnlyWorkspaceIds: workspaceIds.filter((id) => roles.get(id) === "viewer")
      }
    })

  const authenticate = (header: string | undefined): Effect.Effect<Principal, Unauthorized | StorageError> => {
    const token = tokenOf(header)
    if (token === undefined) return Effect.fail(unauthorized)
    if (token.startsWith(prefixes.apiKey)) {
      return Effect.flatMap(
        store.apiKeyByHash(hashToken(token)),
        (key) =>
          Option.isNone(key) || key.value.revokedAt !== undefined
            ? Effect.fail(unauthorized)
            : Effect.succeed<Principal>({
              credential: { type: "api_key", id: key.value.id },
              workspaceIds: [key.value.workspaceId],
              kind: "api_key"
            })
      )
    }
    if (token.startsWith(prefixes.oauth)) {
      return Effect.map(
        Effect.orElse(
          Effect.map(grantOf(token, isOAuthApp), (grant) => ({
            id: grant.id,
            workspaceIds: grant.workspaceIds,
            readOnlyWorkspaceIds: [] as ReadonlyArray<WorkspaceId>
          })),
          () => consentedGrantOf(token)
        ),
        (grant): Principal => ({
          credential: { type: "oauth", id: grant.id },
          workspaceIds: grant.workspaceIds,
          kind: "oauth",
          ...(grant.readOnlyWorkspaceIds.length > 0 ? { readOnlyWorkspaceIds: grant.readOnlyWorkspaceIds } : {})
        })
      )
    }
    return Effect.fail(unauthorized)
  }

  const authenticateMcp = (header: string | undefined): Effect.Effect<McpPrincipal, Unauthorized | StorageError> => {
    const token = tokenOf(header)
    if (token !== undefined && token.startsWith(prefixes.mcp)) {
      return Effect.map(grantOf(token, isMcpToken), (grant): McpPrincipal => ({
        kind: "mcp_token",
        id: grant.id,
        workspaceIds: grant.workspaceIds
      }))
    }
    return Effect.map(authenticate(header), (principal): McpPrincipal => ({
      // `authenticate` answers the two bearer kinds only; a session never reaches the MCP worker.
      kind: principal.kind as "api_key" | "oauth",
      id: principal.credential.id,
      workspaceIds: principal.workspaceIds,
      ...(principal.readOnlyWorkspaceIds === undefined ? {} : { readOnlyWorkspaceIds: principal.readOnlyWorkspaceIds })
    }))
  }

  const reachablePrograms = (principal: Holder): Effect.Effect<ReadonlyArray<Reach>, StorageError> =>
    Effect.gen(function*() {
      const projects = yield* directory.projectsOfWorkspaces(principal.workspaceIds)
      if (projects.length === 0) return []
      const programs = yield* directory.programsOfProjects(projects.map((p) => p.id))
      const byId = new Map(projects.map((p) => [p.id, p]))
      return programs.flatMap((program) => {
        const project = byId.get(program.projectId)
        return project === undefined ? [] : [{ program, project }]
      })
    })

  const workspaces = (principal: Principal): Effect.Effect<ReadonlyArray<Workspace>, StorageError> =>
    Effect.map(
      Effect.forEach(principal.workspaceIds, (id) => directory.workspace(id)),
      (found) => found.flatMap((w) => Option.toArray(w))
    )

  return Credentials.of({
    authenticate,
    authenticateMcp,
    reachableProgram: (principal, programId) =>
      Effect.map(Effect.provideService(reach(principal, programId), DirectoryStore, directory), (r) => r.program),
    reachablePrograms,
    workspaces
  })
})

export const layer: Layer.Layer<Credentials, never, CredentialStore | DirectoryStore | OAuthStore> = Layer.effect(
  Credentials,
  make
)
