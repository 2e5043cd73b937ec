import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Aliases } from "../src/Aliases.js"
import * as Credentials from "../src/Credentials.js"
import { StreakKey } from "../src/Domain.js"
import type { UserHash } from "../src/Ids.js"
import { AchievementStore, UsageStore } from "../src/Ports.js"
import { StateQuery } from "../src/StateQuery.js"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import {
  api,
  at,
  codeOf,
  daysOf,
  drainOutbox,
  layer,
  liveTenant,
  ORIGIN,
  rowOf,
  server,
  SIGNING_SECRET,
  tenant
} from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")
const DAY = 86_400_000

const act = (t: Tenant, userHash: string, daysAgo: number) =>
  server({
    siteKey: t.project.siteKey,
    userHash,
    event: t.program.eventKey,
    ts: new Date(NOON - daysAgo * DAY).toISOString()
  })

const link = (t: Tenant, anonymousId: string, userHash: string) =>
  Effect.flatMap(Aliases, (a) => a.link({ siteKey: t.project.siteKey, anonymousId, userHash }))

describe("Aliases (docs/api.md#aliases)", () => {
  it.effect("linking unions the anonymous id's days into the member's, recomputes the streak and removes the anonymous rows", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live", milestones: [] } })
      yield* TestClock.setTime(NOON)
      yield* act(t, "anon_1", 2)
      yield* act(t, "anon_1", 1)
      yield* act(t, "member", 1)
      yield* act(t, "member", 0)
      assert.strictEqual(yield* link(t, "anon_1", "member"), "linked")
      assert.deepStrictEqual(yield* daysOf(t, "member", "live"), ["2026-05-08", "2026-05-09", "2026-05-10"])
      const row = yield* rowOf(t, "member", "live")
      assert.deepStrictEqual([row?.lastActiveDay, row?.run, row?.best], ["2026-05-10", 3, 3])
      assert.isUndefined(yield* rowOf(t, "anon_1", "live"))
      assert.deepStrictEqual(yield* daysOf(t, "anon_1", "live"), [])
    }).pipe(Effect.provide(layer)))

  it.effect("a member whose month so far came only from the anonymous id is still counted at their next action", () =>
    // The merged row's days include the anonymous id's, but the anonymous id was counted under
    // its own id, the member not yet.
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live", milestones: [] } })
      yield* TestClock.setTime(NOON)
      yield* act(t, "anon_2", 1)
      assert.strictEqual(yield* link(t, "anon_2", "member_2"), "linked")
      const usage = yield* UsageStore
      assert.strictEqual(yield* usage.activeCount(t.workspace.id, "2026-05"), 1)
      yield* act(t, "member_2", 0)
      assert.strictEqual(yield* usage.activeCount(t.workspace.id, "2026-05"), 2)
      assert.deepStrictEqual(
        yield* usage.markActive([{
          workspaceId: t.workspace.id,
          month: "2026-05",
          member: `${t.project.id}:member_2`
        }]),
        [false]
      )
    }).pipe(Effect.provide(layer)))

  it.effect("a milestone first reached by the merged days is achieved after the merge and fires for the member", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      yield* act(t, "anon_1", 2)
      yield* act(t, "anon_1", 1)
      yield* act(t, "member", 0)
      assert.deepStrictEqual(yield* drainOutbox, [])
      yield* link(t, "anon_1", "member")
      const messages = yield* drainOutbox
      assert.deepStrictEqual(
        messages.map((m) => [m.body.type, m.body.data.userHash, m.body.data.milestone.target, m.body.data.streak]),
        [
          ["milestone.achieved", "member", 3, { current: 3, best: 3 }]
        ]
      )
    }).pipe(Effect.provide(layer)))

  it.effect("milestones the anonymous id achieved stay achieved for the member and do not fire again", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      for (const daysAgo of [2, 1, 0]) yield* act(t, "anon_1", daysAgo)
      assert.strictEqual((yield* drainOutbox).length, 1)
      yield* link(t, "anon_1", "member")
      assert.deepStrictEqual(yield* drainOutbox, [])
      const key = new StreakKey({
        projectId: t.project.id,
        programId: t.program.id,
        userHash: "member" as UserHash,
        ledger: "live"
      })
      const [achieved] = yield* Effect.flatMap(AchievementStore, (s) => s.achieved([key]))
      assert.deepStrictEqual(achieved!.map((a) => a.milestoneId), [t.program.milestones[0]!.id])
    }).pipe(Effect.provide(layer)))

  it.effect("after linking, actions sent with the anonymous id count for the member, and state shows the member's streak", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      yield* act(t, "member", 1)
      yield* link(t, "anon_1", "member")
      yield* act(t, "anon_1", 0)
      assert.deepStrictEqual(yield* daysOf(t, "member", "live"), ["2026-05-09", "2026-05-10"])
      assert.isUndefined(yield* rowOf(t, "anon_1", "live"))
      const state = yield* Effect.flatMap(
        StateQuery,
        (q) =>
          q.state({
            siteKey: t.project.siteKey,
            userHash: "anon_1",
            event: t.program.eventKey,
            origin: ORIGIN,
            serverToken: undefined,
            identityToken: undefined
          })
      )
      assert.strictEqual(state.body.streak.current, 2)
    }).pipe(Effect.provide(layer)))

  it.effect("test progress merges into the member's test ledger, never into the live one", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      yield* api(t, { userHash: "anon_1", test: true })
      yield* link(t, "anon_1", "member")
      assert.deepStrictEqual(yield* daysOf(t, "member", "test"), ["2026-05-10"])
      assert.isUndefined(yield* rowOf(t, "member", "live"))
    }).pipe(Effect.provide(layer)))

  it.effect("linking the same pair again is a no-op; linking the anonymous id to another member is ALIAS_CONFLICT", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      assert.strictEqual(yield* link(t, "anon_1", "member"), "linked")
      assert.strictEqual(yield* link(t, "anon_1", "member"), "unchanged")
      assert.strictEqual(yield* codeOf(link(t, "anon_1", "someone_else")), "ALIAS_CONFLICT")
      // The reverse link would make a loop.
      assert.strictEqual(yield* codeOf(link(t, "member", "anon_1")), "ALIAS_CONFLICT")
    }).pipe(Effect.provide(layer)))

  it.effect("an unknown siteKey is INVALID_SITE_KEY; e-mail or over-long ids are INVALID_BODY", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const aliases = yield* Aliases
      const code = (input: { siteKey: string; anonymousId: string; userHash: string }) => codeOf(aliases.link(input))
      assert.strictEqual(yield* code({ siteKey: "site_unknown", anonymousId: "a", userHash: "m" }), "INVALID_SITE_KEY")
      assert.strictEqual(
        yield* code({ siteKey: t.project.siteKey, anonymousId: "a", userHash: "jane@example.com" }),
        "INVALID_BODY"
      )
      assert.strictEqual(
        yield* code({ siteKey: t.project.siteKey, anonymousId: "a".repeat(257), userHash: "m" }),
        "INVALID_BODY"
      )
      assert.strictEqual(yield* code({ siteKey: t.project.siteKey, anonymousId: "", userHash: "m" }), "INVALID_BODY")
    }).pipe(Effect.provide(layer)))

  it.effect("linkWithToken links with a valid alias token; bad, expired, over-long-lived or foreign-site tokens are INVALID_ALIAS_TOKEN", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      const other = yield* tenant()
      yield* TestClock.setTime(NOON)
      yield* act(t, "anon_1", 1)
      const aliases = yield* Aliases
      const sign = (siteKey: string, expiresInSeconds = 300, secret = SIGNING_SECRET) =>
        Credentials.signAliasToken(secret, { userHash: "member", anonymousId: "anon_1", siteKey }, { expiresInSeconds })
      const code = (token: string, siteKey: string = t.project.siteKey) =>
        codeOf(aliases.linkWithToken({ siteKey, token }))
      assert.strictEqual(yield* code("garbage"), "INVALID_ALIAS_TOKEN")
      assert.strictEqual(yield* code(yield* sign(t.project.siteKey, 300, "ass_wrong")), "INVALID_ALIAS_TOKEN")
      assert.strictEqual(yield* code(yield* sign(other.project.siteKey)), "INVALID_ALIAS_TOKEN")
      assert.strictEqual(yield* code(yield* sign(t.project.siteKey, 3600)), "INVALID_ALIAS_TOKEN")
      assert.strictEqual(yield* code(yield* sign(t.project.siteKey), "site_unknown"), "INVALID_SITE_KEY")
      const expiring = yield* sign(t.project.siteKey, 60)
      yield* TestClock.adjust("61 seconds")
      assert.strictEqual(yield* code(expiring), "INVALID_ALIAS_TOKEN")
      assert.strictEqual(
        yield* aliases.linkWithToken({ siteKey: t.project.siteKey, token: yield* sign(t.project.siteKey) }),
        "linked"
      )
      assert.deepStrictEqual(yield* daysOf(t, "member", "live"), ["2026-05-09"])
    }).pipe(Effect.provide(layer)))
})
