/**
 * The OAuth 2.1 authorization server's rules (docs/oauth.md): clients and their redirect URIs,
 * the checks of an authorization request, codes bound to PKCE S256, the token endpoint's two
 * grants (with refresh-token rotation and reuse detection) and revocation. HTTP, pages and
 * sessions are the http package's; this module sees parsed parameters and answers with values.
 *
 * Every secret (client secret, code, access and refresh token) is generated here, handed out once
 * and stored as a SHA-256 hash; the tokens are opaque and checked by `Credentials` like the
 * operator-issued grants.
 */
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import * as crypto from "node:crypto"
import { Audit, type By } from "./Audit.js"
import { AuthorizationCode, OAuthClient, OAuthGrant, OAuthToken } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { CredentialStore, DirectoryStore, OAuthStore, SubscriptionStore, Transactor } from "./Ports.js"
import * as Tokens from "./Tokens.js"

/** Lifetimes (docs/oauth.md#lifetimes), in seconds. */
export const lifetimes = {
  code: 600,
  accessToken: 3600,
  refreshToken: 90 * 24 * 3600
} as const

/** Bounds of what registration accepts. */
export const limits = {
  name: 200,
  redirectUris: 10,
  redirectUri: 2000
} as const

/** An error of the token, revocation or registration endpoint (RFC 6749 §5.2, RFC 7591 §3.2.2). */
export class OAuthError extends Schema.TaggedError<OAuthError>()("OAuthError", {
  error: Schema.Literal(
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_redirect_uri",
    "invalid_client_metadata"
  ),
  description: Schema.String
}) {
  /** 401 for a client that failed to authenticate (RFC 6749 §5.2), 400 for everything else. */
  get status(): number {
    return this.error === "invalid_client" ? 401 : 400
  }
}

const oauthError = (error: OAuthError["error"], description: string) => new OAuthError({ error, description })

// --- Redirect URIs ------------------------------------------------------------------------------

const loopbackHosts = new Set(["127.0.0.1", "[::1]", "localhost"])

/**
 * Whether `uri` may be registered as a redirect URI: absolute, no fragment, no credentials,
 * `https`, or `http` on a loopback host (a native app's local listener, RFC 8252 §7.3).
 */
export const isRegistrableRedirectUri = (uri: string): boolean => {
  if (uri.length === 0 || uri.length > limits.redirectUri || uri.includes("#")) return false
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return false
  }
  if (url.username !== "" || url.password !== "") return false
  if (url.protocol === "https:") return url.hostname !== ""
  return url.protocol === "http:" && loopbackHosts.has(url.hostname)
}

// --- PKCE --------------------------------------------------------------------------------------

const verifierShape = /^[A-Za-z0-9\-._~]{43,128}$/
const challengeShape = /^[A-Za-z0-9\-_]{43}$/

/** Whether `challenge` looks like an S256 challenge (base64url of 32 bytes, no padding). */
export const isS256Challenge = (challenge: string): boolean => challengeShape.test(challenge)

/** Whether `verifier` (RFC 7636 §4.1) hashes to `challenge` under S256, compared in constant time. */
export const verifiesS256 = (verifier: string, challenge: string): boolean => {
  if (!verifierShape.test(verifier) || !isS256Challenge(challenge)) return false
  const actual = crypto.createHash("sha256").update(verifier, "ascii").digest()
  const expected = Buffer.from(challenge, "base64url")
  return expected.length === actual.length && crypto.timingSafeEqual(actual, expected)
}

// --- Authorization requests --------------------------------------------------------------------

/** The query of `GET /oauth/authorize` (absent parameters are undefined). */
export interface AuthorizationRequest {
  readonly responseType: string | undefined
  readonly clientId: string | undefined
  readonly redirectUri: string | undefined
  readonly state: string | undefined
  readonly codeChallenge: string | undefined
  readonly codeChallengeMethod: string | undefined
}

/** What to do with an authorization request. */
export type AuthorizationCheck =
  /** The client or redirect URI is not trusted: an error page, never a redirect (RFC 6749 §4.1.2.1). */
  | { readonly _tag: "Refused"; readonly message: string }
  /** A trusted client with a bad request: back to its redirect URI with `error`. */
  | {
    readonly _tag: "RedirectError"
    readonly redirectUri: string
    readonly state: string | undefined
    readonly error: "invalid_request" | "unsupported_response_type"
    readonly description: string
  }
  | {
    readonly _tag: "Valid"
    readonly client: OAuthClient
    readonly redirectUri: string
    readonly state: string | undefined
    readonly codeChallenge: string
  }

/** What the user consented to, to be turned into a code. */
export interface Consent {
  readonly clientId: Ids.OAuthClientId
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly userId: string
  readonly workspaceIds: ReadonlyArray<Ids.WorkspaceId>
}

// --- Token endpoint ----------------------------------------------------------------------------

/** How the client authenticated at the token or revocation endpoint. */
export interface ClientAuthentication {
  /** From `Authorization: Basic` (RFC 6749 §2.3.1), already form-decoded. */
  readonly basic: { readonly clientId: string; readonly clientSecret: string } | undefined
  /** `client_id` and `client_secret` of the form body. */
  readonly clientId: string | undefined
  readonly clientSecret: string | undefined
}

/** The form of `POST /oauth/token`. */
export interface TokenRequest {
  readonly grantType: string | undefined
  readonly code: string | undefined
  readonly codeVerifier: string | undefined
  readonly redirectUri: string | undefined
  readonly refreshToken: string | undefined
}

/** The successful answer of the token endpoint (RFC 6749 §5.1). */
export interface TokenAnswer {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly expires_in: number
  readonly refresh_token: string
}

export class OAuthServer extends Context.Tag("@streaks/core/OAuthServer")<OAuthServer, {
  /**
   * Registers a client. With `confidential`, a secret is generated and returned in plaintext: shown
   * this once. Redirect URIs not registrable → InvalidBody.
   */
  readonly registerClient: (
    input: { readonly name: string; readonly redirectUris: ReadonlyArray<string>; readonly confidential: boolean },
    by: By
  ) => Effect.Effect<
    { readonly client: OAuthClient; readonly clientSecret: string | undefined },
    InvalidBody | StorageError
  >
  /** Revokes the client and every grant consented to it (their subscriptions removed), atomically. */
  readonly revokeClient: (clientId: string, by: By) => Effect.Effect<void, NotFound | StorageError>
  /** An unrevoked client. */
  readonly client: (clientId: string) => Effect.Effect<Option.Option<OAuthClient>, StorageError>
  /** The checks of an authorization request, in the order docs/oauth.md gives. */
  readonly checkAuthorization: (request: AuthorizationRequest) => Effect.Effect<AuthorizationCheck, StorageError>
  /** A fresh code for the consent (valid `lifetimes.code` seconds), in plaintext. */
  readonly issueCode: (consent: Consent, by: By) => Effect.Effect<string, StorageError>
  /** `POST /oauth/token`. */
  readonly token: (
    auth: ClientAuthentication,
    request: TokenRequest,
    clientAddress: string
  ) => Effect.Effect<TokenAnswer, OAuthError | StorageError>
  /**
   * `POST /oauth/revoke` (RFC 7009): a refresh token ends its grant, an access token ends itself.
   * A token that is unknown, malformed or another client's changes nothing and is no error; a
   * client that fails to authenticate is.
   */
  readonly revoke: (
    auth: ClientAuthentication,
    token: string | undefined,
    clientAddress: string
  ) => Effect.Effect<void, OAuthError | StorageError>
  /** Revokes a consented grant and removes its subscriptions, atomically (a disconnect). */
  readonly revokeGrant: (grant: OAuthGrant, by: By) => Effect.Effect<void, StorageError>
}>() {}

const now = Effect.map(DateTime.now, DateTime.toDateUtc)
const later = (at: Date, seconds: number) => new Date(at.getTime() + seconds * 1000)

export const make = Effect.gen(function*() {
  const store = yield* OAuthStore
  const credentials = yield* CredentialStore
  const directory = yield* DirectoryStore
  const subscriptions = yield* SubscriptionStore
  const transactor = yield* Transactor
  const audit = yield* Audit
  const isClientId = Schema.is(Ids.OAuthClientId)

  /** The client as the audit log names it when it acts at the token or revocation endpoint. */
  const byClient = (c: OAuthClient, clientAddress: string): By => ({
    actor: { kind: "oauth_client", id: c.id },
    clientAddress
  })

  const client = (clientId: string) => isClientId(clientId) ? store.client(clientId) : Effect.succeedNone

  const revokeGrant = (grant: OAuthGrant, at: Date, by: By, reason: string) =>
    Effect.gen(function*() {
      const revoked = yield* credentials.revokeGrant(grant.id, at)
      if (Option.isNone(revoked)) return
      yield* subscriptions.removeCreatedBy(revoked.value.workspaceIds, { type: "oauth", id: grant.id })
      yield* Effect.forEach(
        revoked.value.workspaceIds,
        (workspaceId) =>
          audit.record(by, { action: "oauth_grant.revoke", target: grant.id, workspaceId, details: { reason } }),
        { discard: true }
      )
    })

  const revokeGrantById = (grantId: OAuthGrant["id"], at: Date, by: By, reason: string) =>
    Effect.flatMap(
      store.grant(grantId),
      Option.match({ onNone: () => Effect.void, onSome: (grant) => revokeGrant(grant, at, by, reason) })
    )

  /** The client the request authenticates as (RFC 6749 §2.3), else invalid_client. */
  const authenticateClient = (auth: ClientAuthentication) =>
    Effect.gen(function*() {
      if (auth.basic !== undefined && (auth.clientSecret !== undefined)) {
        return yield* oauthError("invalid_request", "more than one client authentication method")
      }
      if (auth.basic !== undefined && auth.clientId !== undefined && auth.clientId !== auth.basic.clientId) {
        return yield* oauthError("invalid_request", "client_id does not match the Authorization header")
      }
      const clientId = auth.basic?.clientId ?? auth.clientId
      const secret = auth.basic?.clientSecret ?? auth.clientSecret
      const unknown = oauthError("invalid_client", "client authentication failed")
      if (clientId === undefined) return yield* unknown
      const found = yield* client(clientId)
      if (Option.isNone(found)) return yield* unknown
      const c = found.value
      if (c.secretHash === undefined) {
        // A public client authenticates with nothing but its id.
        return secret === undefined ? c : yield* unknown
      }
      return Tokens.matches(secret, c.secretHash) ? c : yield* unknown
    })

  /** An access and a refresh token for the grant, stored as hashes. */
  const issueTokens = (grantId: Ids.OAuthGrantId, at: Date) =>
    Effect.gen(function*() {
      const access = Tokens.generate("oauth")
      const refresh = Tokens.generate("oauthRefresh")
      yield* store.createToken(
        new OAuthToken({
          id: yield* Ids.make("OAuthTokenId"),
          tokenHash: Tokens.hashToken(access),
          kind: "access",
          grantId,
          createdAt: at,
          expiresAt: later(at, lifetimes.accessToken)
        })
      )
      yield* store.createToken(
        new OAuthToken({
          id: yield* Ids.make("OAuthTokenId"),
          tokenHash: Tokens.hashToken(refresh),
          kind: "refresh",
          grantId,
          createdAt: at,
          expiresAt: later(at, lifetimes.refreshToken)
        })
      )
      return {
        access_token: access,
        token_type: "Bearer",
        expires_in: lifetimes.accessToken,
        refresh_token: refresh
      } satisfies TokenAnswer
    })

  const invalidGrant = (description: string) => oauthError("invalid_grant", description)

  const exchangeCode = (c: OAuthClient, request: TokenRequest, by: By) =>
    Effect.gen(function*() {
      if (request.code === undefined) return yield* oauthError("invalid_request", "code is required")
      if (request.codeVerifier === undefined) return yield* oauthError("invalid_request", "code_verifier is required")
      const at = yield* now
      const found = yield* store.codeByHash(Tokens.hashToken(request.code))
      if (Option.isNone(found) || found.value.clientId !== c.id) return yield* invalidGrant("unknown code")
      const code = found.value
      if (code.usedAt !== undefined) {
        // Presented twice: whoever holds it may be an attacker, so what it produced is taken back.
        if (code.grantId !== undefined) {
          yield* transactor.withTransaction(revokeGrantById(code.grantId, at, by, "code presented twice"))
        }
        return yield* invalidGrant("code already used")
      }
      if (code.expiresAt.getTime() <= at.getTime()) return yield* invalidGrant("code expired")
      if (request.redirectUri !== undefined && request.redirectUri !== code.redirectUri) {
        return yield* invalidGrant("redirect_uri differs from the authorization request's")
      }
      if (!verifiesS256(request.codeVerifier, code.codeChallenge)) {
        return yield* invalidGrant("code_verifier does not match")
      }
      const grantId = yield* Ids.make("OAuthGrantId")
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const spent = yield* store.spendCode(code.id, at, grantId)
        if (Option.isNone(spent)) return yield* invalidGrant("code already used")
        yield* credentials.createGrant(
          new OAuthGrant({
            id: grantId,
            workspaceIds: code.workspaceIds,
            appName: c.name,
            // Never handed out: the grant's tokens are its OAuthToken records.
            tokenHash: Tokens.hashToken(Tokens.generate("oauth")),
            createdAt: at,
            clientId: c.id,
            userId: code.userId
          })
        )
        yield* Effect.forEach(
          code.workspaceIds,
          (workspaceId) =>
            audit.record(by, {
              action: "oauth_grant.create",
              target: grantId,
              workspaceId,
              details: { clientId: c.id, appName: c.name, userId: code.userId }
            }),
          { discard: true }
        )
        return yield* issueTokens(grantId, at)
      }))
    })

  const refresh = (c: OAuthClient, request: TokenRequest, by: By) =>
    Effect.gen(function*() {
      if (request.refreshToken === undefined) return yield* oauthError("invalid_request", "refresh_token is required")
      const at = yield* now
      const found = yield* store.tokenByHash(Tokens.hashToken(request.refreshToken))
      if (Option.isNone(found) || found.value.kind !== "refresh") return yield* invalidGrant("unknown refresh token")
      const token = found.value
      const grant = yield* store.grant(token.grantId)
      if (Option.isNone(grant) || grant.value.clientId !== c.id) return yield* invalidGrant("unknown refresh token")
      if (token.revokedAt !== undefined) return yield* invalidGrant("refresh token revoked")
      if (token.usedAt !== undefined) {
        // A rotated token came back: it leaked, so the whole grant ends (RFC 9700 §4.14.2).
        yield* transactor.withTransaction(revokeGrant(grant.value, at, by, "refresh token presented twice"))
        return yield* invalidGrant("refresh token already used")
      }
      if (token.expiresAt.getTime() <= at.getTime()) return yield* invalidGrant("refresh token expired")
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const spent = yield* store.spendToken(token.id, at)
        if (Option.isNone(spent)) {
          yield* revokeGrant(grant.value, at, by, "refresh token presented twice")
          return yield* invalidGrant("refresh token already used")
        }
        return yield* issueTokens(token.grantId, at)
      }))
    })

  return OAuthServer.of({
    registerClient: (input, by) =>
      Effect.gen(function*() {
        const name = input.name.trim()
        if (name.length === 0 || name.length > limits.name) {
          return yield* new InvalidBody({ message: `name must be 1 to ${limits.name} characters` })
        }
        const uris = [...new Set(input.redirectUris)]
        if (uris.length === 0 || uris.length > limits.redirectUris) {
          return yield* new InvalidBody({ message: `redirectUris must hold 1 to ${limits.redirectUris} URIs` })
        }
        const bad = uris.find((uri) => !isRegistrableRedirectUri(uri))
        if (bad !== undefined) {
          return yield* new InvalidBody({
            message: `redirectUris: "${bad}" is not an https URI or an http loopback URI without a fragment`
          })
        }
        const clientSecret = input.confidential ? Tokens.generate("oauthClientSecret") : undefined
        const created = new OAuthClient({
          id: yield* Ids.make("OAuthClientId"),
          name,
          redirectUris: uris,
          ...(clientSecret === undefined ? {} : { secretHash: Tokens.hashToken(clientSecret) }),
          createdAt: yield* now
        })
        yield* transactor.withTransaction(Effect.zipRight(
          store.createClient(created),
          audit.record(by, {
            action: "oauth_client.create",
            target: created.id,
            details: { name, redirectUris: uris, confidential: input.confidential }
          })
        ))
        return { client: created, clientSecret }
      }),

    revokeClient: (clientId, by) =>
      isClientId(clientId)
        ? transactor.withTransaction(Effect.gen(function*() {
          const at = yield* now
          const revoked = yield* store.revokeClient(clientId, at)
          if (Option.isNone(revoked)) return yield* new NotFound({ message: "oauth client not found" })
          const grants = yield* store.grantsOfClient(clientId)
          yield* audit.record(by, { action: "oauth_client.delete", target: clientId })
          yield* Effect.forEach(grants, (grant) => revokeGrant(grant, at, by, "client removed"), { discard: true })
        }))
        : Effect.fail(new NotFound({ message: "oauth client not found" })),

    client,

    checkAuthorization: (request) =>
      Effect.gen(function*() {
        if (request.clientId === undefined) return { _tag: "Refused", message: "The request names no client." } as const
        const found = yield* client(request.clientId)
        if (Option.isNone(found)) return { _tag: "Refused", message: "This application is not registered." } as const
        const c = found.value
        // Exact string comparison: no normalisation, no prefix or port wildcards (RFC 9700 §4.1.3).
        if (request.redirectUri === undefined || !c.redirectUris.includes(request.redirectUri)) {
          return { _tag: "Refused", message: "The redirect address is not registered for this application." } as const
        }
        const back = (error: "invalid_request" | "unsupported_response_type", description: string) =>
          ({
            _tag: "RedirectError",
            redirectUri: request.redirectUri!,
            state: request.state,
            error,
            description
          }) as const
        if (request.responseType !== "code") return back("unsupported_response_type", "response_type must be code")
        if (request.codeChallenge === undefined) return back("invalid_request", "code_challenge is required (PKCE)")
        if (request.codeChallengeMethod !== "S256") return back("invalid_request", "code_challenge_method must be S256")
        if (!isS256Challenge(request.codeChallenge)) return back("invalid_request", "code_challenge is malformed")
        return {
          _tag: "Valid",
          client: c,
          redirectUri: request.redirectUri,
          state: request.state,
          codeChallenge: request.codeChallenge
        } as const
      }),

    issueCode: (consent, by) =>
      Effect.gen(function*() {
        const code = Tokens.generate("oauthCode")
        const at = yield* now
        const workspaces = yield* Effect.forEach(consent.workspaceIds, (id) => directory.workspace(id))
        const workspaceIds = workspaces.flatMap((w) => Option.toArray(w)).map((w) => w.id)
        yield* transactor.withTransaction(Effect.gen(function*() {
          yield* store.createCode(
            new AuthorizationCode({
              id: yield* Ids.make("AuthorizationCodeId"),
              codeHash: Tokens.hashToken(code),
              clientId: consent.clientId,
              userId: consent.userId,
              redirectUri: consent.redirectUri,
              codeChallenge: consent.codeChallenge,
              workspaceIds,
              createdAt: at,
              expiresAt: later(at, lifetimes.code)
            })
          )
          yield* Effect.forEach(
            workspaceIds,
            (workspaceId) => audit.record(by, { action: "oauth.consent", target: consent.clientId, workspaceId }),
            { discard: true }
          )
        }))
        return code
      }),

    token: (auth, request, clientAddress) =>
      Effect.gen(function*() {
        if (request.grantType === undefined) return yield* oauthError("invalid_request", "grant_type is required")
        const c = yield* authenticateClient(auth)
        switch (request.grantType) {
          case "authorization_code":
            return yield* exchangeCode(c, request, byClient(c, clientAddress))
          case "refresh_token":
            return yield* refresh(c, request, byClient(c, clientAddress))
          default:
            return yield* oauthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
        }
      }),

    revoke: (auth, token, clientAddress) =>
      Effect.gen(function*() {
        const c = yield* authenticateClient(auth)
        if (token === undefined) return yield* oauthError("invalid_request", "token is required")
        const found = yield* store.tokenByHash(Tokens.hashToken(token))
        if (Option.isNone(found)) return
        const grant = yield* store.grant(found.value.grantId)
        if (Option.isNone(grant) || grant.value.clientId !== c.id) return
        const at = yield* now
        yield* found.value.kind === "refresh"
          ? transactor.withTransaction(
            revokeGrant(grant.value, at, byClient(c, clientAddress), "refresh token revoked")
          )
          : Effect.asVoid(store.revokeToken(found.value.id, at))
      }),

    revokeGrant: (grant, by) =>
      Effect.flatMap(now, (at) => transactor.withTransaction(revokeGrant(grant, at, by, "disconnected")))
  })
})

export const layer: Layer.Layer<
  OAuthServer,
  never,
  OAuthStore | CredentialStore | DirectoryStore | SubscriptionStore | Transactor | Audit
> = Layer.effect(OAuthServer, make)
