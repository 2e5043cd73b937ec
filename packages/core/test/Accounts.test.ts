/**
 * Accounts' time rules under `TestClock`: a session ends after 12 idle hours and 7 days after
 * sign-in whatever the activity; an invite works for 72 hours; a locked account opens again once
 * its failures are 15 minutes old. Real argon2id hashing, in-memory storage.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import * as Accounts from "../src/Accounts.js"
import * as Audit from "../src/Audit.js"
import { Workspace } from "../src/Domain.js"
import * as Ids from "../src/Ids.js"
import * as MemoryStorage from "../src/MemoryStorage.js"
import * as Passwords from "../src/Passwords.js"
import { Catalog } from "../src/Ports.js"

const layer = Accounts.layer.pipe(
  Layer.provideMerge(Layer.merge(Audit.layer, Passwords.layer)),
  Layer.provideMerge(MemoryStorage.layer)
)

const by = { actor: { kind: "admin", id: "admin" }, clientAddress: "203.0.113.1" } as const
const password = "correct horse battery staple"
const HOUR = 3_600_000

const user = (withPassword = true) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const workspace = new Workspace({
      id: yield* Ids.make("WorkspaceId"),
      name: "Acme",
      plan: "starter",
      createdAt: new Date(0)
    })
    yield* catalog.insert("workspace", workspace)
    const accounts = yield* Accounts.Accounts
    return yield* accounts.createUser({
      email: `Ada.${workspace.id}@Example.com`,
      name: "Ada",
      workspaces: [{ workspaceId: workspace.id, role: "owner" }],
      ...(withPassword ? { password } : {})
    }, by)
  })

describe("Accounts", () => {
  it.effect("a session ends after 12 hours without a request; each request keeps it alive", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { user: ada } = yield* user()
      const { token } = yield* accounts.signIn(ada.email.toUpperCase(), password, "203.0.113.1")
      yield* TestClock.adjust(11 * HOUR)
      assert.isTrue(Option.isSome(yield* accounts.authenticate(token)))
      yield* TestClock.adjust(11 * HOUR)
      assert.isTrue(
        Option.isSome(yield* accounts.authenticate(token)),
        "22 h after sign-in, 11 h after the last request"
      )
      yield* TestClock.adjust(12 * HOUR)
      assert.isTrue(Option.isNone(yield* accounts.authenticate(token)))
      assert.deepStrictEqual(
        yield* (yield* Catalog).find("session", { userId: ada.id }),
        [],
        "the ended session is deleted"
      )
    }).pipe(Effect.provide(layer)))

  it.effect("a session ends 7 days after sign-in, however active", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { user: ada } = yield* user()
      const { token } = yield* accounts.signIn(ada.email, password, "203.0.113.1")
      for (let i = 0; i < 16; i++) {
        yield* TestClock.adjust(10 * HOUR)
        assert.isTrue(Option.isSome(yield* accounts.authenticate(token)), `after ${(i + 1) * 10} h`)
      }
      yield* TestClock.adjust(8 * HOUR)
      assert.isTrue(Option.isNone(yield* accounts.authenticate(token)), "168 h after sign-in")
    }).pipe(Effect.provide(layer)))

  it.effect("an invite works for 72 hours, once", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const first = yield* user(false)
      const second = yield* user(false)
      yield* TestClock.adjust(71 * HOUR)
      assert.isTrue(Option.isSome(yield* accounts.invited(first.inviteToken!)))
      yield* accounts.acceptInvite(first.inviteToken!, password, "203.0.113.1")
      const reused = yield* Effect.flip(accounts.acceptInvite(first.inviteToken!, password, "203.0.113.1"))
      assert.strictEqual(reused._tag, "NotFound")
      yield* TestClock.adjust(HOUR)
      const late = yield* Effect.flip(accounts.acceptInvite(second.inviteToken!, password, "203.0.113.1"))
      assert.strictEqual(late._tag, "NotFound")
      const signedIn = yield* accounts.signIn(first.user.email, password, "203.0.113.1")
      assert.strictEqual(signedIn.user.id, first.user.id)
    }).pipe(Effect.provide(layer)))

  it.effect("5 failures lock the account; it opens again when they are 15 minutes old", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const { user: ada } = yield* user()
      for (let i = 0; i < 5; i++) {
        assert.strictEqual(
          (yield* Effect.flip(accounts.signIn(ada.email, "wrong password!", "x")))._tag,
          "Unauthorized"
        )
        yield* TestClock.adjust(60_000)
      }
      assert.strictEqual((yield* Effect.flip(accounts.signIn(ada.email, password, "x")))._tag, "Unauthorized")
      // The first failure was at 0, now is 5 min; at 15 min it falls out of the window.
      yield* TestClock.adjust(10 * 60_000)
      assert.strictEqual((yield* accounts.signIn(ada.email, password, "x")).user.id, ada.id)
      const [stored] = yield* (yield* Catalog).find("user", { id: ada.id })
      assert.deepStrictEqual(stored!.failedSignIns, [])
    }).pipe(Effect.provide(layer)))

  it.effect("sign-in, failures and sign-out are in the audit log of the user's workspaces", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts.Accounts
      const audit = yield* Audit.Audit
      const { user: ada } = yield* user()
      yield* Effect.flip(accounts.signIn(ada.email, "wrong password!", "198.51.100.9"))
      const { token } = yield* accounts.signIn(ada.email, password, "198.51.100.9")
      yield* accounts.signOut(token, "198.51.100.9")
      const page = yield* audit.read({ workspaceIds: ada.memberships.map((m) => m.workspaceId) })
      assert.deepStrictEqual(
        page.entries.map((e) => e.action).sort(),
        ["session.sign_in", "session.sign_in_failed", "session.sign_out", "user.create"]
      )
      assert.isTrue(
        page.entries.filter((e) => e.action.startsWith("session.")).every((e) =>
          e.actor.id === ada.id && e.clientAddress === "198.51.100.9"
        )
      )
    }).pipe(Effect.provide(layer)))
})
