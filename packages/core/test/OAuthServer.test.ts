import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Either, Option, TestClock } from "effect"
import { createHash } from "node:crypto"
import { Audit } from "../src/Audit.js"
import { User } from "../src/Domain.js"
import * as Ids from "../src/Ids.js"
import * as OAuthServer from "../src/OAuthServer.js"
import { Catalog } from "../src/Ports.js"
import { Subscriptions } from "../src/Subscriptions.js"
import { httpsOnly, layer, principalOf, tenant } from "./support/services.js"

const verifier = "dBjftJeZ4CVP-mJ92K1rBjhmsBn9sUyT8ZM0TNa1Xv8QWvm6Fq"
const challenge = createHash("sha256").update(verifier).digest("base64url")
const redirectUri = "https://app.example.com/callback"
const operator = { actor: { kind: "admin", id: "admin" }, clientAddress: "127.0.0.1" } as const
const address = "127.0.0.1"
const noAuth: OAuthServer.ClientAuthentication = { basic: undefined, clientId: undefined, clientSecret: undefined }

/** A tenant, a confidential client, and a code the user consented to over the tenant's workspace. */
const consented = Effect.gen(function*() {
  const oauth = yield* OAuthServer.OAuthServer
  const t = yield* tenant()
  const catalog = yield* Catalog
  const user = new User({
    id: yield* Ids.make("UserId"),
    email: "ada@example.com",
    emailKey: "ada@example.com",
    name: "Ada",
    memberships: [{ workspaceId: t.workspace.id, role: "owner" }],
    failedSignIns: [],
    createdAt: new Date(0)
  })
  yield* catalog.insert("user", user)
  const setRole = (role: "owner" | "admin" | "viewer" | undefined) =>
    catalog.update("user", { id: user.id }, {
      memberships: role === undefined ? [] : [{ workspaceId: t.workspace.id, role }]
    })
  const { client, clientSecret } = yield* oauth.registerClient({
    name: "Automation",
    redirectUris: [redirectUri],
    confidential: true
  }, operator)
  const code = yield* oauth.issueCode({
    clientId: client.id,
    redirectUri,
    codeChallenge: challenge,
    userId: user.id,
    workspaceIds: [t.workspace.id]
  }, { actor: { kind: "user", id: user.id }, clientAddress: address })
  const auth: OAuthServer.ClientAuthentication = { ...noAuth, clientId: client.id, clientSecret: clientSecret! }
  const exchange = (overrides: Partial<OAuthServer.TokenRequest> = {}, as = auth) =>
    oauth.token(as, {
      grantType: "authorization_code",
      code,
      codeVerifier: verifier,
      redirectUri,
      refreshToken: undefined,
      ...overrides
    }, address)
  const refresh = (refreshToken: string) =>
    oauth.token(auth, {
      grantType: "refresh_token",
      code: undefined,
      codeVerifier: undefined,
      redirectUri: undefined,
      refreshToken
    }, address)
  return { oauth, t, client, clientSecret: clientSecret!, code, auth, exchange, refresh, setRole }
})

const errorOf = <A, R>(effect: Effect.Effect<A, OAuthServer.OAuthError | { readonly _tag: "StorageError" }, R>) =>
  Effect.map(Effect.flip(effect), (e) => (e._tag === "OAuthError" ? e.error : e._tag))

describe("OAuthServer", () => {
  it.effect("a code with its verifier gives opaque svc_oat_/svc_ort_ tokens that Credentials accepts", () =>
    Effect.gen(function*() {
      const { exchange, t } = yield* consented
      const answer = yield* exchange()
      assert.match(answer.access_token, /^svc_oat_/)
      assert.match(answer.refresh_token, /^svc_ort_/)
      assert.strictEqual(answer.expires_in, 3600)
      assert.strictEqual(answer.token_type, "Bearer")
      const principal = yield* principalOf(answer.access_token)
      assert.deepStrictEqual(principal.workspaceIds, [t.workspace.id])
      assert.strictEqual(principal.kind, "oauth")
      // A refresh token is no bearer credential.
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(answer.refresh_token))))
    }).pipe(Effect.provide(layer)))

  it.effect("the grant follows its user: viewer reads only, removed from the workspace reaches nothing", () =>
    Effect.gen(function*() {
      const { exchange, setRole, t } = yield* consented
      const answer = yield* exchange()
      assert.isUndefined((yield* principalOf(answer.access_token)).readOnlyWorkspaceIds)
      yield* setRole("viewer")
      const viewer = yield* principalOf(answer.access_token)
      assert.deepStrictEqual(viewer.workspaceIds, [t.workspace.id])
      assert.deepStrictEqual(viewer.readOnlyWorkspaceIds, [t.workspace.id])
      yield* setRole(undefined)
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(answer.access_token))))
      yield* setRole("admin")
      assert.deepStrictEqual((yield* principalOf(answer.access_token)).workspaceIds, [t.workspace.id])
    }).pipe(Effect.provide(layer)))

  it.effect("the access token stops after expires_in seconds", () =>
    Effect.gen(function*() {
      const { exchange } = yield* consented
      const answer = yield* exchange()
      yield* TestClock.adjust(Duration.seconds(3599))
      assert.isTrue(Either.isRight(yield* Effect.either(principalOf(answer.access_token))))
      yield* TestClock.adjust(Duration.seconds(1))
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(answer.access_token))))
    }).pipe(Effect.provide(layer)))

  it.effect("a code presented twice is invalid_grant and revokes the tokens issued for it", () =>
    Effect.gen(function*() {
      const { exchange } = yield* consented
      const first = yield* exchange()
      assert.strictEqual(yield* errorOf(exchange()), "invalid_grant")
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(first.access_token))))
    }).pipe(Effect.provide(layer)))

  it.effect("no verifier is invalid_request; a wrong one, another redirect_uri or an expired code invalid_grant", () =>
    Effect.gen(function*() {
      const { exchange } = yield* consented
      assert.strictEqual(yield* errorOf(exchange({ codeVerifier: undefined })), "invalid_request")
      assert.strictEqual(yield* errorOf(exchange({ codeVerifier: `${verifier}x` })), "invalid_grant")
      assert.strictEqual(yield* errorOf(exchange({ redirectUri: `${redirectUri}/other` })), "invalid_grant")
      yield* TestClock.adjust(Duration.seconds(600))
      assert.strictEqual(yield* errorOf(exchange()), "invalid_grant")
    }).pipe(Effect.provide(layer)))

  it.effect("a redirect_uri left out of the token request is accepted (it is optional)", () =>
    Effect.gen(function*() {
      const { exchange } = yield* consented
      assert.match((yield* exchange({ redirectUri: undefined })).access_token, /^svc_oat_/)
    }).pipe(Effect.provide(layer)))

  it.effect("a wrong secret, no secret, both methods, or another client's id are refused", () =>
    Effect.gen(function*() {
      const { exchange, auth, client, clientSecret, oauth } = yield* consented
      assert.strictEqual(yield* errorOf(exchange({}, { ...auth, clientSecret: `${clientSecret}x` })), "invalid_client")
      assert.strictEqual(yield* errorOf(exchange({}, { ...auth, clientSecret: undefined })), "invalid_client")
      assert.strictEqual(
        yield* errorOf(exchange({}, { ...auth, basic: { clientId: client.id, clientSecret } })),
        "invalid_request"
      )
      const other = yield* oauth.registerClient(
        { name: "Other", redirectUris: [redirectUri], confidential: true },
        operator
      )
      // The other client authenticates, but the code is not its own.
      assert.strictEqual(
        yield* errorOf(exchange({}, { ...noAuth, clientId: other.client.id, clientSecret: other.clientSecret! })),
        "invalid_grant"
      )
      // client_secret_basic works.
      const answer = yield* exchange({}, { ...noAuth, basic: { clientId: client.id, clientSecret } })
      assert.match(answer.access_token, /^svc_oat_/)
    }).pipe(Effect.provide(layer)))

  it.effect("the audit log records the client, the consent, the grant and its revocation with who did each", () =>
    Effect.gen(function*() {
      const { client, exchange, refresh, t } = yield* consented
      const first = yield* exchange()
      yield* refresh(first.refresh_token)
      yield* Effect.either(refresh(first.refresh_token))
      const { entries } = yield* (yield* Audit).read({})
      const seen = entries.map((e) => `${e.action} ${e.actor.kind}:${e.target === client.id ? "client" : "grant"}`)
      // Under TestClock every entry has the same instant, so their order is not asserted.
      assert.deepStrictEqual([...seen].sort(), [
        "oauth.consent user:client",
        "oauth_client.create admin:client",
        "oauth_grant.create oauth_client:grant",
        "oauth_grant.revoke oauth_client:grant"
      ])
      const grantEntries = entries.filter((e) => e.action !== "oauth_client.create")
      assert.isTrue(grantEntries.every((e) => e.workspaceId === t.workspace.id))
      assert.deepStrictEqual(entries.find((e) => e.action === "oauth_grant.revoke")!.details, {
        reason: "refresh token presented twice"
      })
    }).pipe(Effect.provide(layer)))

  it.effect("a refresh rotates: the old refresh token then revokes the whole grant", () =>
    Effect.gen(function*() {
      const { exchange, refresh } = yield* consented
      const first = yield* exchange()
      const second = yield* refresh(first.refresh_token)
      assert.notStrictEqual(second.refresh_token, first.refresh_token)
      assert.strictEqual(second.expires_in, 3600)
      assert.isTrue(Either.isRight(yield* Effect.either(principalOf(second.access_token))))
      assert.strictEqual(yield* errorOf(refresh(first.refresh_token)), "invalid_grant")
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(second.access_token))))
      assert.strictEqual(yield* errorOf(refresh(second.refresh_token)), "invalid_grant")
    }).pipe(Effect.provide(layer)))

  it.effect("revoking a refresh token ends the grant; revoking an access token ends that token only", () =>
    Effect.gen(function*() {
      const { exchange, refresh, oauth, auth } = yield* consented
      const first = yield* exchange()
      const second = yield* refresh(first.refresh_token)
      yield* oauth.revoke(auth, first.access_token, address)
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(first.access_token))))
      assert.isTrue(Either.isRight(yield* Effect.either(principalOf(second.access_token))))
      // Unknown tokens are no error.
      yield* oauth.revoke(auth, "svc_oat_unknown", address)
      yield* oauth.revoke(auth, second.refresh_token, address)
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(second.access_token))))
    }).pipe(Effect.provide(layer)))

  it.effect("removing the client ends its grants and removes their subscriptions", () =>
    Effect.gen(function*() {
      const { exchange, oauth, client, t } = yield* consented
      const answer = yield* exchange()
      const principal = yield* principalOf(answer.access_token)
      const subscriptions = yield* Subscriptions
      yield* subscriptions.create(principal, {
        programId: t.program.id,
        url: "https://hooks.example.com/a",
        eventTypes: ["milestone.achieved"]
      }, httpsOnly)
      assert.strictEqual((yield* subscriptions.list(principal, t.program.id)).length, 1)
      yield* oauth.revokeClient(client.id, operator)
      assert.isTrue(Either.isLeft(yield* Effect.either(principalOf(answer.access_token))))
      assert.strictEqual((yield* subscriptions.list(principal, t.program.id)).length, 0)
      assert.isTrue(Option.isNone(yield* oauth.client(client.id)))
    }).pipe(Effect.provide(layer)))

  it.effect("authorization requests: unknown client or inexact redirect refused; PKCE S256 required", () =>
    Effect.gen(function*() {
      const { oauth, client } = yield* consented
      const base = {
        responseType: "code",
        clientId: client.id,
        redirectUri,
        state: "s",
        codeChallenge: challenge,
        codeChallengeMethod: "S256"
      }
      assert.strictEqual((yield* oauth.checkAuthorization(base))._tag, "Valid")
      for (
        const bad of [
          { clientId: "oac_unknown" },
          { clientId: undefined },
          { redirectUri: `${redirectUri}/` },
          { redirectUri: "https://APP.example.com/callback" },
          { redirectUri: `${redirectUri}?x=1` },
          { redirectUri: undefined }
        ]
      ) {
        assert.strictEqual((yield* oauth.checkAuthorization({ ...base, ...bad }))._tag, "Refused", JSON.stringify(bad))
      }
      for (
        const bad of [{ codeChallengeMethod: "plain" }, { codeChallengeMethod: undefined }, {
          codeChallenge: undefined
        }]
      ) {
        const check = yield* oauth.checkAuthorization({ ...base, ...bad })
        assert.strictEqual(check._tag, "RedirectError")
        assert.strictEqual(check._tag === "RedirectError" && check.error, "invalid_request")
      }
    }).pipe(Effect.provide(layer)))

  it("registrable redirect URIs: https or http loopback, no fragment", () => {
    assert.isTrue(OAuthServer.isRegistrableRedirectUri("https://app.example.com/cb?x=1"))
    assert.isTrue(OAuthServer.isRegistrableRedirectUri("http://127.0.0.1:49152/cb"))
    assert.isTrue(OAuthServer.isRegistrableRedirectUri("http://localhost:3000/cb"))
    assert.isFalse(OAuthServer.isRegistrableRedirectUri("http://app.example.com/cb"))
    assert.isFalse(OAuthServer.isRegistrableRedirectUri("https://app.example.com/cb#frag"))
    assert.isFalse(OAuthServer.isRegistrableRedirectUri("https://user:pw@app.example.com/cb"))
    assert.isFalse(OAuthServer.isRegistrableRedirectUri("javascript:alert(1)"))
  })
})
