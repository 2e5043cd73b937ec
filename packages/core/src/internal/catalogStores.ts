/**
 * The directory, subscription, credential and experiment stores services use, built on the four
 * calls of the `Catalog` port.
 */
import { Array as Arr, Effect, Option } from "effect"
import type { CredentialRef, Outage, Program } from "../Domain.js"
import { StorageError } from "../Errors.js"
import type { ProgramId, UserId } from "../Ids.js"
import {
  type Catalog,
  type CatalogKind,
  type CatalogRecords,
  CredentialStore,
  DirectoryStore,
  ExperimentStore,
  OAuthStore,
  type OutagesChange,
  SubscriptionStore
} from "../Ports.js"

type CatalogApi = Catalog["Type"]

const first = <A, E>(self: Effect.Effect<ReadonlyArray<A>, E>): Effect.Effect<Option.Option<A>, E> =>
  Effect.map(self, Arr.head)

const inserted = (catalog: CatalogApi) => <K extends CatalogKind>(kind: K, record: CatalogRecords[K]) =>
  Effect.flatMap(
    catalog.insert(kind, record),
    (stored) =>
      stored ? Effect.void : Effect.fail(
        new StorageError({ message: `Catalog.insert: a ${kind} with this id (or another unique field) exists` })
      )
  )

export const directory = (catalog: CatalogApi): DirectoryStore["Type"] => {
  const insert = inserted(catalog)
  return DirectoryStore.of({
    createWorkspace: (workspace) => insert("workspace", workspace),
    workspace: (id) => first(catalog.find("workspace", { id })),
    setPlan: (id, plan) => first(catalog.update("workspace", { id }, { plan })),
    createProject: (project) => insert("project", project),
    project: (id) => first(catalog.find("project", { id })),
    projectBySiteKey: (siteKey) => first(catalog.find("project", { siteKey })),
    projectsOfWorkspaces: (ids) =>
      ids.length === 0 ? Effect.succeed([]) : catalog.find("project", { workspaceId: ids }),
    createProgram: (program) => insert("program", program),
    program: (id) => first(catalog.find("program", { id })),
    programByEventKey: (projectId, eventKey) => first(catalog.find("program", { projectId, eventKey })),
    programsOfProjects: (ids) => ids.length === 0 ? Effect.succeed([]) : catalog.find("program", { projectId: ids }),
    setProgramStatus: (id, status) => first(catalog.update("program", { id }, { status })),
    goLive: (id) =>
      Effect.map(
        catalog.update("program", { id, status: "test" }, { status: "live" }),
        (changed) => changed.length > 0
      ),
    setWebhookSecretHash: (id, webhookSecretHash) => first(catalog.update("program", { id }, { webhookSecretHash })),
    setProgramPolicy: (id, policy, mode) => first(catalog.update("program", { id }, { policy, mode })),
    changeProgramOutages: (id, change) => changeOutages(catalog, id, change, outagesAttempts)
  })
}

/** The windows after `change`: replaced in place by id, else appended, then removed by id. */
export const changedOutages = (outages: ReadonlyArray<Outage>, change: OutagesChange): ReadonlyArray<Outage> => {
  const added = change.add ?? []
  const removed = new Set(change.remove ?? [])
  const byId = new Map(added.map((o) => [o.id, o]))
  const kept = outages.map((o) => byId.get(o.id) ?? o)
  const fresh = added.filter((o) => !outages.some((old) => old.id === o.id))
  return [...kept, ...fresh].filter((o) => !removed.has(o.id))
}

// A change that lost the race reads again: the winner has committed by then (an SQL update waits
// for the row it changes), so the bound only guards against a store that breaks the rule.
const outagesAttempts = 100

/**
 * A compare-and-set on `outagesRevision`: the update matches only the revision read, and
 * `Catalog.update` changes a record in one atomic step, so of concurrent changes exactly one
 * succeeds each time and the others apply theirs to its result.
 */
const changeOutages = (
  catalog: CatalogApi,
  id: ProgramId,
  change: OutagesChange,
  attemptsLeft: number
): Effect.Effect<Option.Option<Program>, StorageError> =>
  Effect.flatMap(first(catalog.find("program", { id })), (found) => {
    if (Option.isNone(found)) return Effect.succeed(found)
    const revision = found.value.outagesRevision
    return Effect.flatMap(
      first(catalog.update("program", { id, outagesRevision: revision ?? null }, {
        outages: changedOutages(found.value.outages ?? [], change),
        outagesRevision: (revision ?? 0) + 1
      })),
      (updated) => {
        if (Option.isSome(updated)) return Effect.succeed(updated)
        if (attemptsLeft > 1) return changeOutages(catalog, id, change, attemptsLeft - 1)
        return Effect.fail(new StorageError({ message: "changeProgramOutages: the program kept changing" }))
      }
    )
  })

const sameCredential = (a: CredentialRef, b: CredentialRef) => a.type === b.type && a.id === b.id

export const subscriptions = (catalog: CatalogApi): SubscriptionStore["Type"] =>
  SubscriptionStore.of({
    create: (subscription) => inserted(catalog)("subscription", subscription),
    get: (id) => first(catalog.find("subscription", { id })),
    remove: (id) => first(catalog.remove("subscription", { id })),
    forEvent: (programId, type) =>
      Effect.map(catalog.find("subscription", { programId }), (found) =>
        found.filter((s) => s.eventTypes.includes(type))),
    ofWorkspaces: (workspaceIds) =>
      workspaceIds.length === 0 ? Effect.succeed([]) : catalog.find("subscription", { workspaceId: workspaceIds }),
    removeCreatedBy: (workspaceIds, credential) =>
      workspaceIds.length === 0 ? Effect.succeed([]) : Effect.flatMap(
        catalog.find("subscription", { workspaceId: workspaceIds }),
        (found) => {
          const ids = found.filter((s) =>
            sameCredential(s.createdBy, credential)
          ).map((s) => s.id)
          return ids.length === 0 ? Effect.succeed([]) : catalog.remove("subscription", { id: ids })
        }
      )
  })

export const credentials = (catalog: CatalogApi): CredentialStore["Type"] => {
  const insert = inserted(catalog)
  return CredentialStore.of({
    createApiKey: (key) => insert("apiKey", key),
    apiKeyByHash: (tokenHash) => first(catalog.find("apiKey", { tokenHash, revokedAt: null })),
    revokeApiKey: (id, at) => first(catalog.update("apiKey", { id, revokedAt: null }, { revokedAt: at })),
    createGrant: (grant) => insert("grant", grant),
    grantByHash: (tokenHash) => first(catalog.find("grant", { tokenHash, revokedAt: null })),
    revokeGrant: (id, at) => first(catalog.update("grant", { id, revokedAt: null }, { revokedAt: at })),
    apiKeysOfWorkspaces: (workspaceIds) =>
      workspaceIds.length === 0
        ? Effect.succeed([])
        : catalog.find("apiKey", { workspaceId: workspaceIds, revokedAt: null }),
    // Grants are few and their workspaces an array no selection names: read them all.
    liveGrants: catalog.find("grant", { revokedAt: null }),
    setGrantWorkspaces: (id, workspaceIds) => first(catalog.update("grant", { id, revokedAt: null }, { workspaceIds }))
  })
}

export const experiments = (catalog: CatalogApi): ExperimentStore["Type"] =>
  ExperimentStore.of({
    start: (experiment) => catalog.insert("experiment", experiment),
    running: (programId) => first(catalog.find("experiment", { programId, endedAt: null })),
    end: (programId, at) => first(catalog.update("experiment", { programId, endedAt: null }, { endedAt: at })),
    history: (programId) =>
      Effect.map(
        catalog.find("experiment", { programId }),
        (found) => [...found].sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime() || (a.id < b.id ? 1 : -1))
      )
  })

export const oauth = (catalog: CatalogApi): OAuthStore["Type"] => {
  const insert = inserted(catalog)
  return OAuthStore.of({
    createClient: (client) => insert("oauthClient", client),
    client: (id) => first(catalog.find("oauthClient", { id, revokedAt: null })),
    revokeClient: (id, at) => first(catalog.update("oauthClient", { id, revokedAt: null }, { revokedAt: at })),
    grantsOfClient: (clientId) => catalog.find("grant", { clientId, revokedAt: null }),
    grantsOfUser: (userId) => catalog.find("grant", { userId, revokedAt: null }),
    grant: (id) => first(catalog.find("grant", { id, revokedAt: null })),
    createCode: (code) => insert("authorizationCode", code),
    codeByHash: (codeHash) => first(catalog.find("authorizationCode", { codeHash })),
    spendCode: (id, at, grantId) =>
      first(catalog.update("authorizationCode", { id, usedAt: null }, { usedAt: at, grantId })),
    createToken: (token) => insert("oauthToken", token),
    tokenByHash: (tokenHash) => first(catalog.find("oauthToken", { tokenHash })),
    spendToken: (id, at) => first(catalog.update("oauthToken", { id, usedAt: null, revokedAt: null }, { usedAt: at })),
    revokeToken: (id, at) => first(catalog.update("oauthToken", { id, revokedAt: null }, { revokedAt: at })),
    touchToken: (id, at) => first(catalog.update("oauthToken", { id, revokedAt: null }, { usedAt: at })),
    tokensOfGrant: (grantId) => catalog.find("oauthToken", { grantId }),
    memberships: (userId) =>
      Effect.map(
        first(catalog.find("user", { id: userId as UserId })),
        (user) => user.pipe(Option.map((u) => u.memberships))
      )
  })
}
