/**
 * Operator-issued MCP tokens (docs/mcp.md): created over workspaces, shown once, accepted by the
 * MCP worker's `authenticateMcp` beside the customer credentials, refused by the customer REST
 * `authenticate`, revocable at once, and kept apart from OAuth grants in the store they share.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Credentials from "../src/Credentials.js"
import * as Ports from "../src/Ports.js"
import { Provisioning } from "../src/Provisioning.js"
import { layer, tenant } from "./support/services.js"

const bearer = (token: string) => `Bearer ${token}`

describe("MCP tokens", () => {
  it.effect("a token is svc_mcp_ + 52 base32 characters, its id mcp_, and only its SHA-256 is stored", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const created = yield* (yield* Provisioning).createMcpToken({
        name: "Support agent",
        workspaceIds: [a.workspace.id]
      })
      assert.match(created.token, /^svc_mcp_[0-9a-hjkmnp-tv-z]{52}$/)
      assert.match(created.id, /^mcp_/)
      const stored = yield* (yield* Ports.CredentialStore).grantByHash(Credentials.hashToken(created.token))
      assert.strictEqual(stored._tag, "Some")
      if (stored._tag === "Some") {
        assert.strictEqual(stored.value.appName, "Support agent")
        assert.notInclude(JSON.stringify(stored.value), created.token)
      }
    }).pipe(Effect.provide(layer)))

  it.effect("the MCP worker accepts MCP tokens, API keys and OAuth tokens, each with its workspaces", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const b = yield* tenant()
      const credentials = yield* Credentials.Credentials
      const token = yield* admin.createMcpToken({ name: "Agent", workspaceIds: [a.workspace.id, b.workspace.id] })
      const grant = yield* admin.createOAuthGrant({ workspaceIds: [b.workspace.id], appName: "Zapier" })
      assert.deepStrictEqual(yield* credentials.authenticateMcp(bearer(token.token)), {
        kind: "mcp_token",
        id: token.id,
        workspaceIds: [a.workspace.id, b.workspace.id]
      })
      assert.deepStrictEqual(yield* credentials.authenticateMcp(bearer(a.apiKey.key)), {
        kind: "api_key",
        id: a.apiKey.id,
        workspaceIds: [a.workspace.id]
      })
      assert.deepStrictEqual(yield* credentials.authenticateMcp(bearer(grant.accessToken)), {
        kind: "oauth",
        id: grant.id,
        workspaceIds: [b.workspace.id]
      })
      const reached = yield* credentials.reachablePrograms(yield* credentials.authenticateMcp(bearer(token.token)))
      assert.sameMembers(reached.map((r) => r.program.id), [a.program.id, b.program.id])
    }).pipe(Effect.provide(layer)))

  it.effect("the customer REST API refuses an MCP token", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const token = yield* (yield* Provisioning).createMcpToken({ name: "Agent", workspaceIds: [a.workspace.id] })
      const error = yield* Effect.flip((yield* Credentials.Credentials).authenticate(bearer(token.token)))
      assert.strictEqual(error._tag, "Unauthorized")
    }).pipe(Effect.provide(layer)))

  it.effect("a revoked, unknown or malformed MCP token is Unauthorized; revocation is effective at once", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const credentials = yield* Credentials.Credentials
      const token = yield* admin.createMcpToken({ name: "Agent", workspaceIds: [a.workspace.id] })
      yield* credentials.authenticateMcp(bearer(token.token))
      yield* admin.revokeMcpToken(token.id)
      for (
        const header of [bearer(token.token), bearer(Credentials.generate("mcp")), token.token, undefined, "Bearer "]
      ) {
        assert.strictEqual(
          (yield* Effect.flip(credentials.authenticateMcp(header)))._tag,
          "Unauthorized",
          String(header)
        )
      }
      assert.strictEqual((yield* Effect.flip(admin.revokeMcpToken(token.id)))._tag, "NotFound")
      assert.strictEqual((yield* Effect.flip(admin.revokeMcpToken("mcp_unknown")))._tag, "NotFound")
    }).pipe(Effect.provide(layer)))

  it.effect("an MCP token and an OAuth grant cannot be revoked through each other's operation", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const credentials = yield* Credentials.Credentials
      const token = yield* admin.createMcpToken({ name: "Agent", workspaceIds: [a.workspace.id] })
      const grant = yield* admin.createOAuthGrant({ workspaceIds: [a.workspace.id], appName: "Zapier" })
      assert.strictEqual((yield* Effect.flip(admin.revokeOAuthGrant(token.id)))._tag, "NotFound")
      assert.strictEqual((yield* Effect.flip(admin.revokeMcpToken(grant.id)))._tag, "NotFound")
      assert.strictEqual((yield* credentials.authenticateMcp(bearer(token.token))).id, token.id)
      assert.strictEqual((yield* credentials.authenticate(bearer(grant.accessToken))).credential.id, grant.id)
    }).pipe(Effect.provide(layer)))

  it.effect("a name of 1 to 200 characters and at least one existing workspace are required", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const failures = [
        yield* Effect.flip(admin.createMcpToken({ name: "  ", workspaceIds: [a.workspace.id] })),
        yield* Effect.flip(admin.createMcpToken({ name: "x".repeat(201), workspaceIds: [a.workspace.id] })),
        yield* Effect.flip(admin.createMcpToken({ name: "Agent", workspaceIds: [] })),
        yield* Effect.flip(admin.createMcpToken({ name: "Agent", workspaceIds: [a.workspace.id, "ws_unknown"] }))
      ]
      assert.deepStrictEqual(failures.map((e) => e._tag), ["InvalidBody", "InvalidBody", "InvalidBody", "NotFound"])
    }).pipe(Effect.provide(layer)))
})
