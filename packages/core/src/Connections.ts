/**
 * Connections, the service: what a signed-in user manages of their workspaces' access
 * (docs/accounts.md#the-session-as-a-credential): the API keys, and the connected apps (OAuth grants),
 * which a user disconnects at once, with the subscriptions the app created in those workspaces.
 * Every operation is given the workspaces the caller may act on; anything outside them answers
 * NotFound, exactly like something that does not exist.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { ApiKey, type OAuthGrant } from "./Domain.js"
import { NotFound, type InvalidBody, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import type { WorkspaceId } from "./Ids.js"
import { CredentialStore, OAuthStore, SubscriptionStore, Transactor } from "./Ports.js"
import * as Provisioning from "./Provisioning.js"
import { generate, hashToken } from "./Tokens.js"

/** A connected app as its workspaces' users see it: never its token. */
export interface App {
  readonly grantId: Ids.OAuthGrantId
  readonly appName: string
  /** The OAuth client it was issued to; absent for apps the operator connected directly. */
  readonly clientId?: string | undefined
  /** Of the grant's workspaces, those the caller's user belongs to. */
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly createdAt: Date
  /**
   * When the app last used the grant: an access token's last request (written to the minute) or a
   * refresh, whichever is later; absent before the first, and for apps the operator connected.
   */
  readonly lastUsedAt?: Date | undefined
}

export interface Disconnected {
  readonly grant: OAuthGrant
  /** Whether the whole grant ended (it reached no other workspace), or only lost these workspaces. */
  readonly revoked: boolean
  readonly subscriptionsRemoved: number
}

const isApp = Schema.is(Ids.OAuthGrantId)

export class Connections extends Context.Tag("@streaks/core/Connections")<Connections, {
  /** The unrevoked API keys of `workspaceIds`, by id. */
  readonly apiKeys: (workspaceIds: ReadonlyArray<WorkspaceId>) => Effect.Effect<ReadonlyArray<ApiKey>, StorageError>
  /** A new API key of `workspaceId` (one of `allowed`), its token shown once. */
  readonly createApiKey: (
    allowed: ReadonlyArray<WorkspaceId>,
    input: { readonly workspaceId: string; readonly name: string }
  ) => Effect.Effect<{ readonly apiKey: ApiKey; readonly key: string }, InvalidBody | NotFound | StorageError>
  /** Revokes a key of `allowed` and removes the subscriptions it created, in one transaction. */
  readonly revokeApiKey: (
    allowed: ReadonlyArray<WorkspaceId>,
    id: string
  ) => Effect.Effect<ApiKey, NotFound | StorageError>
  /** The unrevoked OAuth apps reaching any of `workspaceIds`, oldest first. */
  readonly apps: (workspaceIds: ReadonlyArray<WorkspaceId>) => Effect.Effect<ReadonlyArray<App>, StorageError>
  /**
   * Disconnects an app from `allowed`: its subscriptions there are removed, and the grant stops
   * reaching those workspaces at once; a grant left with no workspace is revoked. One transaction.
   */
  readonly disconnect: (
    allowed: ReadonlyArray<WorkspaceId>,
    grantId: string
  ) => Effect.Effect<Disconnected, NotFound | StorageError>
}>() {}

export const make = Effect.gen(function*() {
  const credentials = yield* CredentialStore
  const oauth = yield* OAuthStore
  const subscriptions = yield* SubscriptionStore
  const transactor = yield* Transactor
  const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
  const notFound = (what: string) => new NotFound({ message: `${what} not found` })

  const apiKeys = (workspaceIds: ReadonlyArray<WorkspaceId>) => credentials.apiKeysOfWorkspaces(workspaceIds)

  const createApiKey = (allowed: ReadonlyArray<WorkspaceId>, input: { workspaceId: string; name: string }) =>
    Effect.gen(function*() {
      const name = yield* Provisioning.validName("name", input.name)
      const workspaceId = allowed.find((id) => id === input.workspaceId)
      if (workspaceId === undefined) return yield* notFound("workspace")
      const key = generate("apiKey")
      const apiKey = new ApiKey({
        id: yield* Ids.make("ApiKeyId"),
        workspaceId,
        name,
        tokenHash: hashToken(key),
        createdAt: yield* now
      })
      yield* credentials.createApiKey(apiKey)
      return { apiKey, key }
    })

  const revokeApiKey = (allowed: ReadonlyArray<WorkspaceId>, id: string) =>
    transactor.withTransaction(Effect.gen(function*() {
      const [key] = yield* credentials.apiKeysOfWorkspaces(allowed).pipe(
        Effect.map((keys) => keys.filter((k) => k.id === id))
      )
      if (key === undefined) return yield* notFound("api key")
      const revoked = yield* credentials.revokeApiKey(key.id, yield* now)
      if (Option.isNone(revoked)) return yield* notFound("api key")
      yield* subscriptions.removeCreatedBy([key.workspaceId], { type: "api_key", id: key.id })
      return revoked.value
    }))

  const reaching = (workspaceIds: ReadonlyArray<WorkspaceId>) =>
    Effect.map(
      credentials.liveGrants,
      (grants) => grants.filter((g) => isApp(g.id) && g.workspaceIds.some((w) => workspaceIds.includes(w)))
    )

  const lastUse = (grant: OAuthGrant) =>
    grant.clientId === undefined
      ? Effect.succeed(undefined)
      : Effect.map(oauth.tokensOfGrant(grant.id as Ids.OAuthGrantId), (tokens) => {
        const latest = Math.max(...tokens.map((t) => t.usedAt?.getTime() ?? -Infinity))
        return Number.isFinite(latest) ? new Date(latest) : undefined
      })

  const apps = (workspaceIds: ReadonlyArray<WorkspaceId>) =>
    Effect.gen(function*() {
      const grants = yield* reaching(workspaceIds)
      const listed = yield* Effect.forEach(grants, (g) =>
        Effect.map(lastUse(g), (lastUsedAt): App => ({
          grantId: g.id as Ids.OAuthGrantId,
          appName: g.appName,
          ...(g.clientId === undefined ? {} : { clientId: g.clientId }),
          workspaceIds: g.workspaceIds.filter((w) => workspaceIds.includes(w)),
          createdAt: g.createdAt,
          ...(lastUsedAt === undefined ? {} : { lastUsedAt })
        })))
      return listed.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.grantId < b.grantId ? -1 : 1))
    })

  const disconnect = (allowed: ReadonlyArray<WorkspaceId>, grantId: string) =>
    transactor.withTransaction(Effect.gen(function*() {
      const [grant] = (yield* reaching(allowed)).filter((g) => g.id === grantId)
      if (grant === undefined) return yield* notFound("connected app")
      const mine = grant.workspaceIds.filter((w) => allowed.includes(w))
      const kept = grant.workspaceIds.filter((w) => !allowed.includes(w))
      const changed = kept.length === 0
        ? yield* credentials.revokeGrant(grant.id, yield* now)
        : yield* credentials.setGrantWorkspaces(grant.id, kept)
      if (Option.isNone(changed)) return yield* notFound("connected app")
      const removed = yield* subscriptions.removeCreatedBy(mine, { type: "oauth", id: grant.id })
      return { grant: changed.value, revoked: kept.length === 0, subscriptionsRemoved: removed.length }
    }))

  return Connections.of({ apiKeys, createApiKey, revokeApiKey, apps, disconnect })
})

export const layer: Layer.Layer<Connections, never, CredentialStore | OAuthStore | SubscriptionStore | Transactor> =
  Layer.effect(
    Connections,
    make
  )
