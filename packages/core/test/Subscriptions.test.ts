import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { SubscriptionStore } from "../src/Ports.js"
import { Provisioning } from "../src/Provisioning.js"
import { SecretBox } from "../src/SecretBox.js"
import { Subscriptions } from "../src/Subscriptions.js"
import { httpsOnly, layer, principalOf, tenant } from "./support/services.js"

const devMode = { allowInsecureUrls: true } as const

describe("Subscriptions", () => {
  it.effect("creating returns a whsec_ secret once; storage keeps it sealed, with the creating credential", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      yield* TestClock.setTime(Date.UTC(2026, 3, 1, 8))
      const principal = yield* principalOf(a.apiKey.key)
      const created = yield* (yield* Subscriptions).create(
        principal,
        {
          programId: a.program.id,
          url: "https://hooks.example/streaks",
          eventTypes: ["milestone.achieved", "reward.unlocked", "milestone.achieved"]
        },
        httpsOnly
      )
      assert.match(created.id, /^sub_/)
      assert.match(created.secret, /^whsec_/)
      assert.strictEqual(Buffer.from(created.secret.slice(6), "base64").length, 24)
      assert.deepStrictEqual({ ...created, id: "", secret: "" }, {
        id: "",
        secret: "",
        programId: a.program.id,
        url: "https://hooks.example/streaks",
        eventTypes: ["milestone.achieved", "reward.unlocked"],
        createdAt: new Date(Date.UTC(2026, 3, 1, 8))
      })
      const stored = Option.getOrThrow(yield* (yield* SubscriptionStore).get(created.id))
      assert.notInclude(JSON.stringify(stored), created.secret)
      assert.strictEqual((yield* SecretBox).open(stored.secretSealed), created.secret)
      assert.deepStrictEqual(stored.createdBy, { type: "api_key", id: a.apiKey.id })
      assert.strictEqual(stored.workspaceId, a.workspace.id)
      assert.strictEqual(stored.projectId, a.project.id)
    }).pipe(Effect.provide(layer)))

  it.effect("URLs must be HTTPS; plain HTTP only to localhost or 127.0.0.1 and only when the operator allows it", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const subscriptions = yield* Subscriptions
      const principal = yield* principalOf(a.apiKey.key)
      const create = (url: string, options: { readonly allowInsecureUrls: boolean }) =>
        subscriptions.create(principal, { programId: a.program.id, url, eventTypes: ["streak.at_risk"] }, options)
      for (
        const url of [
          "http://localhost:8080/hook",
          "http://127.0.0.1/hook",
          "http://hooks.example/x",
          "ftp://hooks.example",
          "not a url",
          "/relative"
        ]
      ) {
        assert.strictEqual((yield* Effect.flip(create(url, httpsOnly)))._tag, "InvalidBody", url)
      }
      yield* create("http://localhost:8080/hook", devMode)
      yield* create("http://127.0.0.1:9000/hook", devMode)
      for (const url of ["http://hooks.example/x", "http://10.0.0.1/x", `https://hooks.example/${"x".repeat(2100)}`]) {
        assert.strictEqual((yield* Effect.flip(create(url, devMode)))._tag, "InvalidBody", url.slice(0, 40))
      }
    }).pipe(Effect.provide(layer)))

  it.effect("eventTypes must be a non-empty subset of the four outbound types", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const subscriptions = yield* Subscriptions
      const principal = yield* principalOf(a.apiKey.key)
      for (const eventTypes of [[], ["streak.lost"], ["milestone.achieved", "MILESTONE.ACHIEVED"]]) {
        const error = yield* Effect.flip(
          subscriptions.create(principal, { programId: a.program.id, url: "https://h.example", eventTypes }, httpsOnly)
        )
        assert.strictEqual(error._tag, "InvalidBody", JSON.stringify(eventTypes))
      }
    }).pipe(Effect.provide(layer)))

  it.effect("a program outside the credential's reach is NotFound, like an unknown one, and nothing is stored", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant()
      const subscriptions = yield* Subscriptions
      const principal = yield* principalOf(a.apiKey.key)
      const body = (programId: string) => ({ programId, url: "https://h.example", eventTypes: ["streak.broken"] })
      const foreign = yield* Effect.flip(subscriptions.create(principal, body(b.program.id), httpsOnly))
      const unknown = yield* Effect.flip(subscriptions.create(principal, body("prg_unknown"), httpsOnly))
      assert.strictEqual(foreign._tag, "NotFound")
      assert.deepStrictEqual(foreign, unknown)
      assert.deepStrictEqual(yield* subscriptions.list(yield* principalOf(b.apiKey.key), b.program.id), [])
    }).pipe(Effect.provide(layer)))

  it.effect("any credential of the workspace may remove a subscription; another workspace gets NotFound", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant()
      const subscriptions = yield* Subscriptions
      const creator = yield* principalOf(a.apiKey.key)
      const colleague = yield* principalOf((yield* (yield* Provisioning).createApiKey(a.workspace.id, "second")).key)
      const stranger = yield* principalOf(b.apiKey.key)
      const sub = yield* subscriptions.create(
        creator,
        { programId: a.program.id, url: "https://hooks.example/a", eventTypes: ["streak.at_risk"] },
        httpsOnly
      )
      assert.strictEqual((yield* Effect.flip(subscriptions.remove(stranger, sub.id)))._tag, "NotFound")
      yield* subscriptions.remove(colleague, sub.id)
      assert.isTrue(Option.isNone(yield* (yield* SubscriptionStore).get(sub.id)))
      assert.strictEqual(
        (yield* Effect.flip(subscriptions.remove(creator, sub.id)))._tag,
        "NotFound",
        "already removed"
      )
      assert.strictEqual((yield* Effect.flip(subscriptions.remove(creator, "sub_unknown")))._tag, "NotFound")
    }).pipe(Effect.provide(layer)))

  it.effect("list shows the program's subscriptions oldest first, without secrets", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const subscriptions = yield* Subscriptions
      const principal = yield* principalOf(a.apiKey.key)
      const create = (url: string, eventTypes: ReadonlyArray<string>) =>
        subscriptions.create(principal, { programId: a.program.id, url, eventTypes }, httpsOnly)
      const first = yield* create("https://h.example/1", ["streak.at_risk", "streak.broken"])
      yield* TestClock.adjust("1 minute")
      const second = yield* create("https://h.example/2", ["reward.unlocked"])
      const listed = yield* subscriptions.list(principal, a.program.id)
      assert.deepStrictEqual(listed.map((s) => s.id), [first.id, second.id])
      assert.isFalse(listed.some((s) => "secret" in s))
      assert.strictEqual(
        (yield* Effect.flip(subscriptions.list(yield* principalOf((yield* tenant()).apiKey.key), a.program.id)))._tag,
        "NotFound"
      )
    }).pipe(Effect.provide(layer)))
})
