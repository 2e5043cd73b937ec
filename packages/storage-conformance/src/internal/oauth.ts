/**
 * Conformance of the authorization server's records (`OAuthStore` on the `Catalog`): clients,
 * codes and tokens round-trip exactly; revoked records are hidden where the port says so; a code
 * and a refresh token are spent once, also among concurrent callers; an access token's last use
 * is recorded.
 */
import { assert, describe } from "@effect/vitest"
import { AuthorizationCode, OAuthClient, OAuthToken } from "@streaks/core/Domain"
import type { OAuthClientId, OAuthGrantId, WorkspaceId } from "@streaks/core/Ids"
import { CredentialStore, OAuthStore } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { at, epoch, freshId, makeGrant, makeWorkspace, randomHex } from "../Fixtures.js"
import { concurrently, countTrue, HOUR, type It, plain } from "./kit.js"

const makeClient = (overrides: Partial<ConstructorParameters<typeof OAuthClient>[0]> = {}) =>
  new OAuthClient({
    id: freshId("OAuthClientId"),
    name: "Automation platform",
    redirectUris: ["https://app.example.com/callback", "http://127.0.0.1:49152/cb?x=1"],
    secretHash: randomHex(32),
    createdAt: epoch,
    ...overrides
  })

const makeCode = (clientId: OAuthClientId, workspaceIds: ReadonlyArray<WorkspaceId>) =>
  new AuthorizationCode({
    id: freshId("AuthorizationCodeId"),
    codeHash: randomHex(32),
    clientId,
    userId: `usr_${randomHex(8)}`,
    redirectUri: "https://app.example.com/callback",
    codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    workspaceIds,
    createdAt: epoch,
    expiresAt: at(epoch, 600_000)
  })

const makeToken = (grantId: OAuthGrantId, kind: "access" | "refresh") =>
  new OAuthToken({
    id: freshId("OAuthTokenId"),
    tokenHash: randomHex(32),
    kind,
    grantId,
    createdAt: epoch,
    expiresAt: at(epoch, HOUR)
  })

export const oauthSuite = (it: It) =>
  describe("OAuthStore", () => {
    it.effect("clients, codes, tokens and a consented grant come back exactly as stored", () =>
      Effect.gen(function*() {
        const store = yield* OAuthStore
        const credentials = yield* CredentialStore
        const workspace = makeWorkspace()
        const confidential = makeClient()
        const publicClient = makeClient({ secretHash: undefined, redirectUris: ["http://localhost:3000/cb"] })
        yield* store.createClient(confidential)
        yield* store.createClient(publicClient)
        const userId = `usr_${randomHex(8)}`
        const grant = makeGrant([workspace.id], { id: freshId("OAuthGrantId"), clientId: confidential.id, userId })
        yield* credentials.createGrant(grant)
        const code = makeCode(confidential.id, [workspace.id])
        yield* store.createCode(code)
        const access = makeToken(grant.id as OAuthGrantId, "access")
        const refresh = makeToken(grant.id as OAuthGrantId, "refresh")
        yield* store.createToken(access)
        yield* store.createToken(refresh)

        assert.deepStrictEqual(plain(Option.getOrThrow(yield* store.client(confidential.id))), plain(confidential))
        const pub = Option.getOrThrow(yield* store.client(publicClient.id))
        assert.deepStrictEqual(plain(pub), plain(publicClient))
        assert.isUndefined(pub.secretHash)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* store.codeByHash(code.codeHash))), plain(code))
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* store.tokenByHash(access.tokenHash))), plain(access))
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* store.tokenByHash(refresh.tokenHash))), plain(refresh))
        const stored = Option.getOrThrow(yield* store.grant(grant.id))
        assert.deepStrictEqual(plain(stored), plain(grant))
        assert.deepStrictEqual((yield* store.grantsOfClient(confidential.id)).map((g) => g.id), [grant.id])
        assert.deepStrictEqual((yield* store.grantsOfUser(userId)).map((g) => g.id), [grant.id])
        assert.isTrue(Option.isNone(yield* store.codeByHash(randomHex(32))))
        assert.isTrue(Option.isNone(yield* store.tokenByHash(randomHex(32))))
      }))

    it.effect("a revoked client, and a revoked grant, are no longer found; revoking twice finds nothing", () =>
      Effect.gen(function*() {
        const store = yield* OAuthStore
        const credentials = yield* CredentialStore
        const client = makeClient()
        yield* store.createClient(client)
        const grant = makeGrant([makeWorkspace().id], { clientId: client.id, userId: `usr_${randomHex(8)}` })
        yield* credentials.createGrant(grant)
        const revoked = Option.getOrThrow(yield* store.revokeClient(client.id, at(epoch, HOUR)))
        assert.deepStrictEqual(revoked.revokedAt, at(epoch, HOUR))
        assert.isTrue(Option.isNone(yield* store.client(client.id)))
        assert.isTrue(Option.isNone(yield* store.revokeClient(client.id, at(epoch, 2 * HOUR))))
        yield* credentials.revokeGrant(grant.id, at(epoch, HOUR))
        assert.isTrue(Option.isNone(yield* store.grant(grant.id)))
        assert.deepStrictEqual(yield* store.grantsOfClient(client.id), [])
        assert.deepStrictEqual(yield* store.grantsOfUser(grant.userId!), [])
      }))

    it.effect("an access token's last use is recorded and read back with the grant's tokens; a revoked one is not touched", () =>
      Effect.gen(function*() {
        const store = yield* OAuthStore
        const grantId = freshId("OAuthGrantId")
        const access = makeToken(grantId, "access")
        const refresh = makeToken(grantId, "refresh")
        const elsewhere = makeToken(freshId("OAuthGrantId"), "access")
        yield* store.createToken(access)
        yield* store.createToken(refresh)
        yield* store.createToken(elsewhere)
        const touched = Option.getOrThrow(yield* store.touchToken(access.id, at(epoch, 1000)))
        assert.deepStrictEqual(touched.usedAt, at(epoch, 1000))
        // Touched again later: the newer time replaces the older.
        yield* store.touchToken(access.id, at(epoch, 61_000))
        const tokens = yield* store.tokensOfGrant(grantId)
        assert.deepStrictEqual(tokens.map((t) => t.id).sort(), [access.id, refresh.id].sort())
        assert.deepStrictEqual(tokens.find((t) => t.id === access.id)!.usedAt, at(epoch, 61_000))
        assert.isUndefined(tokens.find((t) => t.id === refresh.id)!.usedAt)
        yield* store.revokeToken(access.id, at(epoch, 2 * HOUR))
        assert.isTrue(Option.isNone(yield* store.touchToken(access.id, at(epoch, 3 * HOUR))))
        assert.deepStrictEqual(
          Option.getOrThrow(yield* store.tokenByHash(access.tokenHash)).usedAt,
          at(epoch, 61_000)
        )
        assert.deepStrictEqual(yield* store.tokensOfGrant(freshId("OAuthGrantId")), [])
      }))

    it.effect("of 8 concurrent spends of a code exactly one gets it, and the code then names its grant", () =>
      Effect.gen(function*() {
        const store = yield* OAuthStore
        const client = makeClient()
        const code = makeCode(client.id, [makeWorkspace().id])
        yield* store.createCode(code)
        const grants = Array.from({ length: 8 }, () => freshId("OAuthGrantId"))
        const spent = yield* concurrently(8, (i) => store.spendCode(code.id, at(epoch, 1000), grants[i]!))
        assert.strictEqual(countTrue(spent.map(Option.isSome)), 1)
        const winner = spent.findIndex(Option.isSome)
        const after = Option.getOrThrow(yield* store.codeByHash(code.codeHash))
        assert.deepStrictEqual(after.usedAt, at(epoch, 1000))
        assert.strictEqual(after.grantId, grants[winner])
        assert.isTrue(Option.isNone(yield* store.spendCode(code.id, at(epoch, 2000), freshId("OAuthGrantId"))))
      }))

    it.effect("of 8 concurrent spends of a refresh token exactly one gets it; a revoked token is not spent", () =>
      Effect.gen(function*() {
        const store = yield* OAuthStore
        const grantId = freshId("OAuthGrantId")
        const token = makeToken(grantId, "refresh")
        yield* store.createToken(token)
        const spent = yield* concurrently(8, () => store.spendToken(token.id, at(epoch, 1000)))
        assert.strictEqual(countTrue(spent.map(Option.isSome)), 1)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.tokenByHash(token.tokenHash)).usedAt, at(epoch, 1000))

        const other = makeToken(grantId, "refresh")
        yield* store.createToken(other)
        assert.isTrue(Option.isSome(yield* store.revokeToken(other.id, at(epoch, 1000))))
        assert.isTrue(Option.isNone(yield* store.revokeToken(other.id, at(epoch, 2000))))
        assert.isTrue(Option.isNone(yield* store.spendToken(other.id, at(epoch, 3000))))
        const found = Option.getOrThrow(yield* store.tokenByHash(other.tokenHash))
        assert.deepStrictEqual(found.revokedAt, at(epoch, 1000))
        assert.isUndefined(found.usedAt)
      }))
  })
