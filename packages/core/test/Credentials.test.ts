import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { SignJWT } from "jose"
import { timingSafeEqual } from "node:crypto"
import { vi } from "vitest"
import * as Credentials from "../src/Credentials.js"
import { Provisioning } from "../src/Provisioning.js"
import { layer, principalOf, tenant } from "./support/services.js"

// A pass-through spy: lets a test see that `matches` really goes through timingSafeEqual.
vi.mock("node:crypto", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:crypto")>()
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) }
})

const MARCH_1 = Date.UTC(2026, 2, 1, 12, 0, 0)
const secret = Credentials.generate("signing")
const siteKey = "site_01test"
const key = new TextEncoder().encode(secret)

describe("token formats", () => {
  it("each kind of secret carries its prefix and 32 random bytes (52 base32 chars)", () => {
    const cases = [
      ["server", "sst_"],
      ["webhook", "whi_"],
      ["apiKey", "svc_api_"],
      ["oauth", "svc_oat_"],
      ["signing", "ass_"]
    ] as const
    for (const [kind, prefix] of cases) {
      const token = Credentials.generate(kind)
      assert.isTrue(token.startsWith(prefix), token)
      assert.match(token.slice(prefix.length), /^[0-9a-hjkmnp-tv-z]{52}$/)
    }
  })

  it("a subscription secret is whsec_ + base64 of a 24-byte key (Standard Webhooks)", () => {
    const token = Credentials.generate("subscription")
    assert.match(token, /^whsec_[A-Za-z0-9+/]+=*$/)
    assert.strictEqual(Buffer.from(token.slice("whsec_".length), "base64").length, 24)
  })

  it("no two generated secrets are equal", () => {
    const tokens = new Set(Array.from({ length: 500 }, () => Credentials.generate("apiKey")))
    assert.strictEqual(tokens.size, 500)
  })

  it("hashToken is the SHA-256 hex digest", () => {
    assert.strictEqual(Credentials.hashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  })
})

describe("matches", () => {
  it("accepts the token of the hash and refuses other tokens, undefined and malformed hashes", () => {
    const token = Credentials.generate("server")
    const hash = Credentials.hashToken(token)
    assert.isTrue(Credentials.matches(token, hash))
    assert.isFalse(Credentials.matches(Credentials.generate("server"), hash))
    assert.isFalse(Credentials.matches(token.slice(0, -1), hash))
    assert.isFalse(Credentials.matches(undefined, hash))
    assert.isFalse(Credentials.matches(token, "not-a-hash"))
    assert.isFalse(Credentials.matches(token, ""))
  })

  it("compares fixed-length digests with timingSafeEqual, whatever the token's length", () => {
    const spy = vi.mocked(timingSafeEqual)
    const hash = Credentials.hashToken(Credentials.generate("server"))
    for (const candidate of ["x", "sst_short", Credentials.generate("server"), "y".repeat(10_000)]) {
      spy.mockClear()
      assert.isFalse(Credentials.matches(candidate, hash))
      assert.strictEqual(spy.mock.calls.length, 1)
      const [a, b] = spy.mock.calls[0]! as unknown as [Buffer, Buffer]
      assert.strictEqual(a.length, 32)
      assert.strictEqual(b.length, 32)
    }
  })
})

describe("identity tokens", () => {
  const expect = { userHash: "u_1", siteKey }

  it.effect("a token signed with the project's secret for this member and site is valid until exp", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const token = yield* Credentials.signIdentityToken(secret, expect, { expiresInSeconds: 60 })
      assert.isTrue(yield* Credentials.verifyIdentityToken(token, secret, expect))
      yield* TestClock.adjust("59 seconds")
      assert.isTrue(yield* Credentials.verifyIdentityToken(token, secret, expect))
      yield* TestClock.adjust("1 second")
      assert.isFalse(yield* Credentials.verifyIdentityToken(token, secret, expect), "expired at exp")
    }))

  it.effect("a token for another site, another member or signed with another secret is invalid", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const token = yield* Credentials.signIdentityToken(secret, expect)
      assert.isFalse(yield* Credentials.verifyIdentityToken(token, secret, { ...expect, siteKey: "site_other" }))
      assert.isFalse(yield* Credentials.verifyIdentityToken(token, secret, { ...expect, userHash: "u_2" }))
      assert.isFalse(yield* Credentials.verifyIdentityToken(token, Credentials.generate("signing"), expect))
      assert.isFalse(yield* Credentials.verifyIdentityToken("garbage", secret, expect))
      assert.isFalse(yield* Credentials.verifyIdentityToken(token + "x", secret, expect))
    }))

  it.effect("a token without exp, or with another algorithm than HS256, is invalid", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const noExp = yield* Effect.promise(() =>
        new SignJWT({ sub: "u_1", site: siteKey }).setProtectedHeader({ alg: "HS256" }).sign(key)
      )
      assert.isFalse(yield* Credentials.verifyIdentityToken(noExp, secret, expect))
      const hs512 = yield* Effect.promise(() =>
        new SignJWT({ sub: "u_1", site: siteKey })
          .setProtectedHeader({ alg: "HS512" })
          .setExpirationTime(MARCH_1 / 1000 + 60)
          .sign(new TextEncoder().encode(secret.repeat(2)))
      )
      assert.isFalse(yield* Credentials.verifyIdentityToken(hs512, secret.repeat(2), expect))
    }))
})

describe("alias tokens", () => {
  const claims = { userHash: "u_1", anonymousId: "anon_1", siteKey }
  const raw = (payload: Record<string, unknown>) =>
    Effect.promise(() => new SignJWT(payload).setProtectedHeader({ alg: "HS256" }).sign(key))

  it.effect("a valid token yields the member and the anonymous id", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const token = yield* Credentials.signAliasToken(secret, claims)
      const result = yield* Credentials.verifyAliasToken(token, secret, siteKey)
      assert.deepStrictEqual(result, Option.some({ userHash: "u_1", anonymousId: "anon_1" }))
    }))

  it.effect("an expired token, a token for another site or signed with another secret is refused", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const token = yield* Credentials.signAliasToken(secret, claims, { expiresInSeconds: 120 })
      assert.isTrue(Option.isNone(yield* Credentials.verifyAliasToken(token, secret, "site_other")))
      assert.isTrue(Option.isNone(yield* Credentials.verifyAliasToken(token, Credentials.generate("signing"), siteKey)))
      yield* TestClock.adjust("120 seconds")
      assert.isTrue(Option.isNone(yield* Credentials.verifyAliasToken(token, secret, siteKey)))
    }))

  it.effect("a lifetime of exactly 10 minutes is accepted, one second more is refused", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const ok = yield* Credentials.signAliasToken(secret, claims, { expiresInSeconds: 600 })
      assert.isTrue(Option.isSome(yield* Credentials.verifyAliasToken(ok, secret, siteKey)))
      const tooLong = yield* Credentials.signAliasToken(secret, claims, { expiresInSeconds: 601 })
      assert.isTrue(Option.isNone(yield* Credentials.verifyAliasToken(tooLong, secret, siteKey)))
      // Issued in the past but still long-lived: exp − iat decides, not the time left.
      yield* TestClock.adjust("5 minutes")
      assert.isTrue(Option.isNone(yield* Credentials.verifyAliasToken(tooLong, secret, siteKey)))
    }))

  it.effect("without iat, an exp more than 10 minutes ahead is refused", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const now = MARCH_1 / 1000
      const base = { sub: "u_1", anon: "anon_1", site: siteKey }
      const near = yield* raw({ ...base, exp: now + 300 })
      assert.isTrue(Option.isSome(yield* Credentials.verifyAliasToken(near, secret, siteKey)))
      const far = yield* raw({ ...base, exp: now + 3600 })
      assert.isTrue(Option.isNone(yield* Credentials.verifyAliasToken(far, secret, siteKey)))
    }))

  it.effect("a token missing anon, sub or exp is refused", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(MARCH_1)
      const exp = MARCH_1 / 1000 + 60
      for (
        const payload of [
          { sub: "u_1", site: siteKey, exp },
          { anon: "anon_1", site: siteKey, exp },
          { sub: "u_1", anon: "anon_1", site: siteKey }
        ]
      ) {
        const token = yield* raw(payload)
        assert.isTrue(
          Option.isNone(yield* Credentials.verifyAliasToken(token, secret, siteKey)),
          JSON.stringify(payload)
        )
      }
    }))
})

describe("Credentials service", () => {
  it.effect("an API key authenticates as its one workspace; an OAuth token as the grant's workspaces", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const other = yield* admin.createWorkspace({ name: "Other", plan: "growth" })
      const fromKey = yield* principalOf(a.apiKey.key)
      assert.deepStrictEqual(fromKey, {
        credential: { type: "api_key", id: a.apiKey.id },
        workspaceIds: [a.workspace.id],
        kind: "api_key"
      })
      const grant = yield* admin.createOAuthGrant({ workspaceIds: [a.workspace.id, other.id], appName: "Zapier" })
      const fromGrant = yield* principalOf(grant.accessToken)
      assert.deepStrictEqual(fromGrant, {
        credential: { type: "oauth", id: grant.id },
        workspaceIds: [a.workspace.id, other.id],
        kind: "oauth"
      })
      const credentials = yield* Credentials.Credentials
      const lower = yield* credentials.authenticate(`bearer ${a.apiKey.key}`)
      assert.strictEqual(lower.credential.id, a.apiKey.id)
      const workspaces = yield* credentials.workspaces(fromGrant)
      assert.deepStrictEqual(workspaces.map((w) => w.name), ["Acme", "Other"])
    }).pipe(Effect.provide(layer)))

  it.effect("a missing, malformed, unknown or foreign-format bearer token is Unauthorized", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const credentials = yield* Credentials.Credentials
      for (
        const header of [
          undefined,
          "",
          a.apiKey.key,
          `Basic ${a.apiKey.key}`,
          "Bearer ",
          `Bearer ${Credentials.generate("apiKey")}`,
          `Bearer ${Credentials.generate("oauth")}`,
          `Bearer ${a.serverToken}`,
          `Bearer ${a.apiKey.key} extra`
        ]
      ) {
        const error = yield* Effect.flip(credentials.authenticate(header))
        assert.strictEqual(error._tag, "Unauthorized", String(header))
      }
    }).pipe(Effect.provide(layer)))

  it.effect("a program of another workspace is NotFound, exactly like an unknown id", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant({ eventKey: "other_event" })
      const credentials = yield* Credentials.Credentials
      const principal = yield* principalOf(a.apiKey.key)
      const own = yield* credentials.reachableProgram(principal, a.program.id)
      assert.strictEqual(own.id, a.program.id)
      const foreign = yield* Effect.flip(credentials.reachableProgram(principal, b.program.id))
      const unknown = yield* Effect.flip(credentials.reachableProgram(principal, "prg_doesnotexist"))
      assert.strictEqual(foreign._tag, "NotFound")
      assert.deepStrictEqual(foreign, unknown)
      const listed = yield* credentials.reachablePrograms(principal)
      assert.deepStrictEqual(listed.map((r) => [r.program.id, r.project.siteKey]), [[a.program.id, a.project.siteKey]])
    }).pipe(Effect.provide(layer)))

  it.effect("an OAuth grant reaches the programs of every workspace it covers, and no other", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant()
      const c = yield* tenant()
      const grant = yield* (yield* Provisioning).createOAuthGrant({
        workspaceIds: [a.workspace.id, b.workspace.id],
        appName: "Make"
      })
      const credentials = yield* Credentials.Credentials
      const principal = yield* principalOf(grant.accessToken)
      const ids = (yield* credentials.reachablePrograms(principal)).map((r) => r.program.id)
      assert.sameMembers([...ids], [a.program.id, b.program.id])
      assert.strictEqual((yield* Effect.flip(credentials.reachableProgram(principal, c.program.id)))._tag, "NotFound")
    }).pipe(Effect.provide(layer)))
})
