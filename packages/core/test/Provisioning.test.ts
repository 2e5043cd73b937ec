import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Credentials from "../src/Credentials.js"
import { Subscriptions } from "../src/Subscriptions.js"
import { Provisioning } from "../src/Provisioning.js"
import { SecretBox } from "../src/SecretBox.js"
import { CredentialStore, DirectoryStore, SubscriptionStore } from "../src/Ports.js"
import * as Ids from "../src/Ids.js"
import { httpsOnly, layer, principalOf, tenant } from "./support/services.js"

const tagOf = <A, E extends { readonly _tag: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(self), (e) => e._tag)

describe("workspaces", () => {
  it.effect("a workspace needs a name and a known plan; setPlan of an unknown workspace is NotFound", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const ws = yield* admin.createWorkspace({ name: "  Acme  ", plan: "starter" })
      assert.match(ws.id, /^ws_/)
      assert.strictEqual(ws.name, "Acme")
      assert.strictEqual(yield* tagOf(admin.createWorkspace({ name: " ", plan: "starter" })), "InvalidBody")
      assert.strictEqual(yield* tagOf(admin.createWorkspace({ name: "x", plan: "gold" as "pro" })), "InvalidBody")
      assert.strictEqual((yield* admin.setPlan(ws.id, "pro")).plan, "pro")
      assert.strictEqual(yield* tagOf(admin.setPlan("ws_unknown", "pro")), "NotFound")
    }).pipe(Effect.provide(layer)))
})

describe("projects", () => {
  it.effect("the server token and signing secret are returned once; storage keeps a hash and a sealed value", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      assert.match(a.serverToken, /^sst_/)
      assert.match(a.signingSecret, /^ass_/)
      assert.match(a.project.siteKey, /^site_/)
      const stored = Option.getOrThrow(yield* (yield* DirectoryStore).project(a.project.id))
      const dump = JSON.stringify(stored)
      assert.notInclude(dump, a.serverToken)
      assert.notInclude(dump, a.signingSecret)
      assert.strictEqual(stored.serverTokenHash, Credentials.hashToken(a.serverToken))
      assert.isTrue(Credentials.matches(a.serverToken, stored.serverTokenHash))
      assert.strictEqual((yield* SecretBox).open(stored.signingSecretSealed), a.signingSecret)
    }).pipe(Effect.provide(layer)))

  it.effect("defaults: UTC, browser counting on, no legacy no-origin ingest; origins stored as browsers send them", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const ws = yield* admin.createWorkspace({ name: "Acme", plan: "starter" })
      const { project } = yield* admin.createProject({
        workspaceId: ws.id,
        name: "Web",
        allowedOrigins: [
          "https://Acme.Example:443/",
          "http://localhost:3000",
          "https://*.acme.example",
          "https://acme.example"
        ]
      })
      assert.strictEqual(project.timezone, "UTC")
      assert.strictEqual(project.browserCounting, "count")
      assert.isFalse(project.legacyNoOriginIngest)
      assert.deepStrictEqual(project.allowedOrigins, [
        "https://acme.example",
        "http://localhost:3000",
        "https://*.acme.example"
      ])
      const custom = yield* admin.createProject({
        workspaceId: ws.id,
        name: "App",
        allowedOrigins: [],
        timezone: "Europe/Berlin",
        browserCounting: "display-only",
        legacyNoOriginIngest: true
      })
      assert.strictEqual(custom.project.timezone, "Europe/Berlin")
      assert.strictEqual(custom.project.browserCounting, "display-only")
      assert.isTrue(custom.project.legacyNoOriginIngest)
    }).pipe(Effect.provide(layer)))

  it.effect("an origin with a path, another scheme, a bare wildcard, or an unknown zone is InvalidBody; an unknown workspace NotFound", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const ws = yield* admin.createWorkspace({ name: "Acme", plan: "starter" })
      const base = { workspaceId: ws.id, name: "Web", allowedOrigins: [] as Array<string> }
      for (
        const origin of [
          "https://acme.example/app",
          "ftp://acme.example",
          "https://*.com",
          "http://*.acme.example",
          "acme.example",
          "null"
        ]
      ) {
        assert.strictEqual(
          yield* tagOf(admin.createProject({ ...base, allowedOrigins: [origin] })),
          "InvalidBody",
          origin
        )
      }
      for (const timezone of ["Mars/Olympus", "+01:00", ""]) {
        assert.strictEqual(yield* tagOf(admin.createProject({ ...base, timezone })), "InvalidBody", timezone)
      }
      assert.strictEqual(yield* tagOf(admin.createProject({ ...base, workspaceId: "ws_unknown" })), "NotFound")
    }).pipe(Effect.provide(layer)))
})

describe("programs", () => {
  it.effect("a new program is test, with a whi_ secret stored only as its hash, milestones by target with ms_ ids", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const { program, webhookSecret } = yield* (yield* Provisioning).createProgram({
        projectId: a.project.id,
        name: "Workout",
        eventKey: "workout",
        milestones: [
          { target: 30, msg: "A month", rewardType: "coupon", rewardValue: "SAVE30" },
          { target: 7, msg: "A week" }
        ],
        settings: { mainMessage: "Move!" }
      })
      assert.strictEqual(program.status, "test")
      assert.match(webhookSecret, /^whi_/)
      assert.deepStrictEqual(program.milestones.map((m) => [m.target, m.rewardType, m.rewardValue]), [
        [7, "message", undefined],
        [30, "coupon", "SAVE30"]
      ])
      assert.isTrue(program.milestones.every((m) => m.id.startsWith("ms_")))
      assert.deepStrictEqual(
        { ...program.settings },
        { theme: { name: "default" }, position: "bottom-right", mainMessage: "Move!" }
      )
      const stored = Option.getOrThrow(yield* (yield* DirectoryStore).program(program.id))
      assert.notInclude(JSON.stringify(stored), webhookSecret)
      assert.isTrue(Credentials.matches(webhookSecret, stored.webhookSecretHash))
    }).pipe(Effect.provide(layer)))

  it.effect("an event key already counted in the project is InvalidBody; another project may reuse it", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const input = { projectId: a.project.id, name: "Again", eventKey: a.program.eventKey, milestones: [] }
      const error = yield* Effect.flip(admin.createProgram(input))
      assert.strictEqual(error._tag, "InvalidBody")
      assert.include(error.message ?? "", "eventKey")
      const other = yield* admin.createProject({ workspaceId: a.workspace.id, name: "Other", allowedOrigins: [] })
      const reused = yield* admin.createProgram({ ...input, projectId: other.project.id })
      assert.strictEqual(reused.program.eventKey, a.program.eventKey)
    }).pipe(Effect.provide(layer)))

  it.effect("milestone targets must be unique positive integers, and coupons and links need a value", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const base = { projectId: a.project.id, name: "P", eventKey: "p" }
      for (
        const milestones of [
          [{ target: 7, msg: "a" }, { target: 7, msg: "b" }],
          [{ target: 0, msg: "a" }],
          [{ target: -3, msg: "a" }],
          [{ target: 2.5, msg: "a" }],
          [{ target: 5, msg: "a", rewardType: "coupon" as const }],
          [{ target: 5, msg: "a", rewardType: "link" as const, rewardValue: "" }]
        ]
      ) {
        assert.strictEqual(
          yield* tagOf(admin.createProgram({ ...base, milestones })),
          "InvalidBody",
          JSON.stringify(milestones)
        )
      }
      for (const eventKey of ["", "x".repeat(129)]) {
        assert.strictEqual(yield* tagOf(admin.createProgram({ ...base, eventKey, milestones: [] })), "InvalidBody")
      }
      assert.strictEqual(
        yield* tagOf(admin.createProgram({ ...base, projectId: "prj_unknown", milestones: [] })),
        "NotFound"
      )
    }).pipe(Effect.provide(layer)))

  it.effect("rotating the webhook secret replaces the stored hash: the old secret stops matching", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      const { webhookSecret } = yield* admin.rotateWebhookSecret(a.program.id)
      assert.match(webhookSecret, /^whi_/)
      const stored = Option.getOrThrow(yield* (yield* DirectoryStore).program(a.program.id))
      assert.isTrue(Credentials.matches(webhookSecret, stored.webhookSecretHash))
      assert.isFalse(Credentials.matches(a.webhookSecret, stored.webhookSecretHash))
      assert.strictEqual(yield* tagOf(admin.rotateWebhookSecret("prg_unknown")), "NotFound")
    }).pipe(Effect.provide(layer)))

  it.effect("an operator can set a program live and back to test; unknown programs are NotFound", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      assert.strictEqual((yield* admin.setProgramStatus(a.program.id, "live")).status, "live")
      assert.strictEqual((yield* admin.setProgramStatus(a.program.id, "test")).status, "test")
      assert.strictEqual(yield* tagOf(admin.setProgramStatus(a.program.id, "paused" as "live")), "InvalidBody")
      assert.strictEqual(yield* tagOf(admin.setProgramStatus("prg_unknown", "live")), "NotFound")
    }).pipe(Effect.provide(layer)))
})

describe("customer credentials", () => {
  it.effect("an API key is svc_api_ and an OAuth token svc_oat_; storage keeps only their hashes", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      assert.match(a.apiKey.key, /^svc_api_/)
      assert.match(a.apiKey.id, /^key_/)
      const grant = yield* admin.createOAuthGrant({ workspaceIds: [a.workspace.id, a.workspace.id], appName: "Zapier" })
      assert.match(grant.accessToken, /^svc_oat_/)
      const store = yield* CredentialStore
      const key = Option.getOrThrow(yield* store.apiKeyByHash(Credentials.hashToken(a.apiKey.key)))
      const stored = Option.getOrThrow(yield* store.grantByHash(Credentials.hashToken(grant.accessToken)))
      assert.notInclude(JSON.stringify(key), a.apiKey.key)
      assert.notInclude(JSON.stringify(stored), grant.accessToken)
      assert.deepStrictEqual(stored.workspaceIds, [a.workspace.id])
    }).pipe(Effect.provide(layer)))

  it.effect("keys and grants for unknown workspaces are NotFound; a grant needs a workspace and an app name", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning
      const a = yield* tenant()
      assert.strictEqual(yield* tagOf(admin.createApiKey("ws_unknown", "k")), "NotFound")
      assert.strictEqual(yield* tagOf(admin.createApiKey(a.workspace.id, "")), "InvalidBody")
      assert.strictEqual(
        yield* tagOf(admin.createOAuthGrant({ workspaceIds: [a.workspace.id, "ws_unknown"], appName: "Z" })),
        "NotFound"
      )
      assert.strictEqual(yield* tagOf(admin.createOAuthGrant({ workspaceIds: [], appName: "Z" })), "InvalidBody")
      assert.strictEqual(
        yield* tagOf(admin.createOAuthGrant({ workspaceIds: [a.workspace.id], appName: " " })),
        "InvalidBody"
      )
    }).pipe(Effect.provide(layer)))

  /** Three subscriptions on one program: by the key under test, by another key, by an OAuth app. */
  const threeCreators = Effect.gen(function*() {
    const admin = yield* Provisioning
    const subscriptions = yield* Subscriptions
    const a = yield* tenant()
    const otherKey = yield* admin.createApiKey(a.workspace.id, "other")
    const grant = yield* admin.createOAuthGrant({ workspaceIds: [a.workspace.id], appName: "Make" })
    const subscribe = (token: string, url: string) =>
      Effect.flatMap(
        principalOf(token),
        (p) => subscriptions.create(p, { programId: a.program.id, url, eventTypes: ["milestone.achieved"] }, httpsOnly)
      )
    const byKey = yield* subscribe(a.apiKey.key, "https://hooks.example/key")
    const byOtherKey = yield* subscribe(otherKey.key, "https://hooks.example/other")
    const byGrant = yield* subscribe(grant.accessToken, "https://hooks.example/grant")
    return { a, otherKey, grant, byKey, byOtherKey, byGrant }
  })

  /** URLs of the program's subscriptions still stored. */
  const remaining = (programId: string) =>
    Effect.flatMap(
      SubscriptionStore,
      (store) =>
        Effect.map(store.forEvent(Ids.unsafe("ProgramId", programId), "milestone.achieved"), (subs) =>
          subs.map((s) => s.url).sort())
    )

  it.effect("revoking an API key fails its next request at once and removes only the subscriptions it created", () =>
    Effect.gen(function*() {
      const { a, otherKey, grant } = yield* threeCreators
      yield* (yield* Provisioning).revokeApiKey(a.apiKey.id)
      assert.strictEqual(yield* tagOf(principalOf(a.apiKey.key)), "Unauthorized")
      assert.deepStrictEqual(yield* remaining(a.program.id), [
        "https://hooks.example/grant",
        "https://hooks.example/other"
      ])
      yield* principalOf(otherKey.key)
      yield* principalOf(grant.accessToken)
      assert.strictEqual(yield* tagOf((yield* Provisioning).revokeApiKey(a.apiKey.id)), "NotFound")
    }).pipe(Effect.provide(layer)))

  it.effect("disconnecting an OAuth app fails its next request at once and removes only the subscriptions it created", () =>
    Effect.gen(function*() {
      const { a, grant } = yield* threeCreators
      yield* (yield* Provisioning).revokeOAuthGrant(grant.id)
      assert.strictEqual(yield* tagOf(principalOf(grant.accessToken)), "Unauthorized")
      assert.deepStrictEqual(yield* remaining(a.program.id), [
        "https://hooks.example/key",
        "https://hooks.example/other"
      ])
      yield* principalOf(a.apiKey.key)
      assert.strictEqual(yield* tagOf((yield* Provisioning).revokeOAuthGrant("oag_unknown")), "NotFound")
    }).pipe(Effect.provide(layer)))
})
