/**
 * The tools on programs with a streak policy (docs/mcp.md#tools), through the official SDK's client
 * linked to the worker's server in process: `explain_streak` tells a weekly streak week by week
 * (a frozen week included), `list_programs` shows each program's policy, and the member view and
 * `list_at_risk` count in weeks; `simulate_policy` replays the history under another policy.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Credentials, OutboxSignal, Policy, Provisioning, SecretBox, Services, StreakPolicies } from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { Effect, Layer, TestClock } from "effect"
import * as Protocol from "../src/Protocol.js"
import type * as Tools from "../src/Tools.js"

const layer = Services.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(MemoryStorage.layer, SecretBox.layerEphemeral, OutboxSignal.layerNoop))
)

/** Two active days a week, a bank of at most two freezes, none at the start and none earned. */
const weekly = { cadence: "weekly", target: 2, freezes: { initial: 0, max: 2, earnEvery: 0 } } as const

/** 12:00 UTC of a date (the members' zone is the project's, UTC). */
const noon = (date: string) => Date.parse(`${date}T12:00:00Z`)

/** Tuesday 2026-03-10, in the ISO week of Monday 2026-03-09. */
const TODAY = "2026-03-10"

/** A workspace with a weekly live program and a default one, and an MCP token over it. */
const tenant = (name = "Acme") =>
  Effect.gen(function*() {
    const admin = yield* Provisioning.Provisioning
    const workspace = yield* admin.createWorkspace({ name, plan: "starter" })
    const { project } = yield* admin.createProject({ workspaceId: workspace.id, name, allowedOrigins: [] })
    const { program } = yield* admin.createProgram({
      projectId: project.id,
      name: "Weekly workout",
      eventKey: "workout",
      milestones: [],
      policy: weekly
    })
    yield* admin.setProgramStatus(program.id, "live")
    const daily = yield* admin.createProgram({
      projectId: project.id,
      name: "Daily lesson",
      eventKey: "lesson",
      milestones: []
    })
    const mcp = yield* admin.createMcpToken({ name: "agent", workspaceIds: [workspace.id] })
    return { program, daily: daily.program, mcpToken: mcp.token }
  })

const connect = (token: string) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<Tools.Requirements>()
    const caller = (yield* Credentials.Credentials).authenticateMcp(`Bearer ${token}`)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    const client = new Client({ name: "test", version: "1.0.0" })
    yield* Effect.promise(() => Protocol.make(caller, runtime, "192.0.2.1").connect(serverSide))
    yield* Effect.promise(() => client.connect(clientSide))
    yield* Effect.addFinalizer(() => Effect.promise(() => client.close()))
    return client
  })

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }))

/** The part of an `explain_streak` answer the assertions read by field. */
interface Ledger {
  readonly periods: ReadonlyArray<{ readonly start: string; readonly status: string }>
}

const texts = (result: Record<string, unknown>) =>
  (result["content"] as ReadonlyArray<{ readonly type: string; readonly text?: string }>).map((c) => c.text)

/**
 * Weeks of 2026-02-16 and 02-23 kept (two days each), the week of 03-02 with one day only, one
 * day so far in the week of 03-09; "frozen" was granted a freeze in the first week, "unfrozen" not.
 * Each action is recorded at the time it happens.
 */
const history = (client: Client, programId: string) =>
  Effect.gen(function*() {
    const policies = yield* StreakPolicies.StreakPolicies
    yield* TestClock.setTime(noon("2026-02-16"))
    assert.deepStrictEqual(yield* policies.grantFreezes(programId, "frozen", 1), { freezes: 1 })
    for (const date of ["2026-02-16", "2026-02-17", "2026-02-23", "2026-02-25", "2026-03-04", "2026-03-09"]) {
      yield* TestClock.setTime(noon(date))
      for (const userHash of ["frozen", "unfrozen"]) {
        const answer = yield* call(client, "record_action", { programId, userHash })
        assert.deepStrictEqual(answer.structuredContent, { counted: true }, `${userHash} ${date}`)
      }
    }
    yield* TestClock.setTime(noon(TODAY))
  })

describe("explain_streak", () => {
  it.scoped("explains a weekly streak week by week: a week short of its target is frozen by a granted freeze", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      yield* history(client, t.program.id)
      const policy = Policy.toJson(Policy.of(t.program))

      const frozen = yield* call(client, "explain_streak", { programId: t.program.id, userHash: "frozen" })
      assert.isUndefined(frozen.isError)
      assert.deepStrictEqual(frozen.structuredContent, {
        programId: t.program.id,
        userHash: "frozen",
        policy,
        current: 2,
        best: 2,
        freezes: 0,
        periods: [
          { start: "2026-02-16", end: "2026-02-22", status: "kept", activeDays: 2, target: 2 },
          { start: "2026-02-23", end: "2026-03-01", status: "kept", activeDays: 2, target: 2 },
          { start: "2026-03-02", end: "2026-03-08", status: "frozen", activeDays: 1, target: 2 },
          { start: "2026-03-09", end: "2026-03-15", status: "current", activeDays: 1, target: 2 }
        ]
      })
      assert.deepStrictEqual(JSON.parse(texts(frozen)[0]!), frozen.structuredContent)

      // Without a freeze the short week ends the chain: nothing is alive while this week is not kept.
      const unfrozen = yield* call(client, "explain_streak", { programId: t.program.id, userHash: "unfrozen" })
      assert.deepInclude(unfrozen.structuredContent, { current: 0, best: 2, freezes: 0 })
      assert.deepStrictEqual(
        (unfrozen.structuredContent as Ledger).periods.map((p) => p.status),
        ["kept", "kept", "missed", "current"]
      )

      // A range keeps the periods that overlap it.
      const ranged = yield* call(client, "explain_streak", {
        programId: t.program.id,
        userHash: "frozen",
        from: "2026-02-25",
        to: "2026-03-02"
      })
      assert.deepStrictEqual(
        (ranged.structuredContent as Ledger).periods.map((p) => p.start),
        ["2026-02-23", "2026-03-02"]
      )
      assert.deepInclude(ranged.structuredContent, { current: 2, freezes: 0 })

      // A member with no action: no periods, and the bank the policy starts with.
      const nobody = yield* call(client, "explain_streak", { programId: t.program.id, userHash: "nobody" })
      assert.deepStrictEqual(nobody.structuredContent, {
        programId: t.program.id,
        userHash: "nobody",
        policy,
        current: 0,
        best: 0,
        freezes: 0,
        periods: []
      })
    }).pipe(Effect.provide(layer)))

  it.scoped("bad dates, a range that ends before it starts and a bad userHash are INVALID_BODY naming them", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const programId = t.program.id
      const cases = [
        [{ programId, userHash: "m1", from: "yesterday" }, "from"],
        [{ programId, userHash: "m1", to: "2026-02-30" }, "to"],
        [{ programId, userHash: "m1", from: "2026-03-10", to: "2026-03-09" }, "from"],
        [{ programId, userHash: "a@b.example" }, "userHash"],
        [{ programId }, "userHash"],
        [{ programId, userHash: "m1", days: 7 }, "days"]
      ] as const
      for (const [args, field] of cases) {
        const result = yield* call(client, "explain_streak", args)
        assert.isTrue(result.isError, JSON.stringify(args))
        const [code, message] = texts(result)
        assert.strictEqual(code, "INVALID_BODY", JSON.stringify(args))
        assert.include(message, field, JSON.stringify(args))
        assert.isUndefined(result.structuredContent)
      }
    }).pipe(Effect.provide(layer)))

  it.scoped("a program of another workspace and an unknown one both answer NOT_FOUND", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant("Other")
      const theirs = yield* connect(other.mcpToken)
      yield* history(theirs, other.program.id)
      const client = yield* connect(t.mcpToken)
      for (const programId of [other.program.id, "prg_unknown"]) {
        const result = yield* call(client, "explain_streak", { programId, userHash: "frozen" })
        assert.isTrue(result.isError, programId)
        assert.deepStrictEqual(texts(result), ["NOT_FOUND"], programId)
        assert.isUndefined(result.structuredContent)
      }
    }).pipe(Effect.provide(layer)))
})

describe("list_programs", () => {
  it.scoped("shows each program's policy, the default one for a program created without", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const listed = yield* call(client, "list_programs", {})
      const policies = Object.fromEntries(
        (listed.structuredContent as {
          readonly programs: ReadonlyArray<{ readonly id: string; readonly policy: unknown }>
        })
          .programs.map((p) => [p.id, p.policy])
      )
      assert.deepStrictEqual(policies, {
        [t.program.id]: {
          cadence: "weekly",
          target: 2,
          dayStartHour: 0,
          restDays: [],
          freezes: { initial: 0, max: 2, earnEvery: 0 },
          atRiskHour: 0,
          repairWindowDays: 0,
          repairsPer30Days: 1
        },
        [t.daily.id]: {
          cadence: "daily",
          target: 1,
          dayStartHour: 0,
          restDays: [],
          freezes: { initial: 0, max: 0, earnEvery: 0 },
          atRiskHour: 0,
          repairWindowDays: 0,
          repairsPer30Days: 1
        }
      })
    }).pipe(Effect.provide(layer)))
})

describe("weekly streaks in the other tools", () => {
  it.scoped("get_member_streak adds mode, freezes and the current period; list_at_risk owes the week", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      yield* history(client, t.program.id)
      const member = yield* call(client, "get_member_streak", { programId: t.program.id, userHash: "frozen" })
      assert.deepStrictEqual(member.structuredContent, {
        programId: t.program.id,
        userHash: "frozen",
        current: 2,
        best: 2,
        todayDone: false,
        pending: true,
        lastActiveDate: "2026-03-09",
        isLive: true,
        mode: "weekly",
        freezes: 0,
        period: { start: "2026-03-09", end: "2026-03-15", done: 1, target: 2 }
      })
      // The week is owed until Sunday; "unfrozen" has no chain left to lose.
      const atRisk = yield* call(client, "list_at_risk", { programId: t.program.id })
      assert.deepStrictEqual(atRisk.structuredContent, {
        members: [{ userHash: "frozen", current: 2, periodEnd: "2026-03-15" }]
      })
      // A second day keeps the week: nothing is owed any more.
      yield* call(client, "record_action", { programId: t.program.id, userHash: "frozen" })
      assert.deepStrictEqual((yield* call(client, "list_at_risk", { programId: t.program.id })).structuredContent, {
        members: []
      })
      const kept = yield* call(client, "get_member_streak", { programId: t.program.id, userHash: "frozen" })
      assert.deepInclude(kept.structuredContent, { current: 3, todayDone: true, pending: false })
    }).pipe(Effect.provide(layer)))

  it.scoped("a default program's member answer has none of the policy fields", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const member = yield* call(client, "get_member_streak", { programId: t.daily.id, userHash: "m1" })
      assert.sameMembers(Object.keys(member.structuredContent!), [
        "programId",
        "userHash",
        "current",
        "best",
        "todayDone",
        "pending",
        "lastActiveDate",
        "isLive"
      ])
    }).pipe(Effect.provide(layer)))
})

describe("simulate_policy", () => {
  it.scoped("answers the weekly history under its policy and under a daily one, changing nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      yield* history(client, t.program.id)
      const result = yield* call(client, "simulate_policy", { programId: t.program.id, policy: {} })
      assert.isUndefined(result.isError)
      // Weekly: "frozen" keeps two weeks across the short one, "unfrozen" broke there. Daily: every
      // member breaks after each run of days and is on a run of 1 with today still to do.
      assert.deepStrictEqual(result.structuredContent, {
        actual: {
          members: 2,
          alive: 1,
          broken: 1,
          freezesUsed: 1,
          milestonesAchieved: 0,
          lengthHistogram: [{ length: 0, members: 1 }, { length: 2, members: 1 }]
        },
        proposed: {
          members: 2,
          alive: 2,
          broken: 8,
          freezesUsed: 0,
          milestonesAchieved: 0,
          lengthHistogram: [{ length: 1, members: 2 }]
        }
      })
      const ledger = yield* call(client, "explain_streak", { programId: t.program.id, userHash: "frozen" })
      assert.strictEqual((ledger.structuredContent as { current: number }).current, 2)
      const invalid = yield* call(client, "simulate_policy", {
        programId: t.program.id,
        policy: { cadence: "weekly", target: 8 }
      })
      assert.isTrue(invalid.isError)
      assert.strictEqual(texts(invalid)[0], "INVALID_BODY")
      assert.include(texts(invalid)[1], "policy")
    }).pipe(Effect.provide(layer)))
})

describe("tools/list", () => {
  it.scoped("publishes explain_streak after get_member_streak, read-only, with its schemas", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const { tools } = yield* Effect.promise(() => client.listTools())
      const names = tools.map((tool) => tool.name)
      assert.strictEqual(names.indexOf("explain_streak"), names.indexOf("get_member_streak") + 1)
      const explain = tools.find((tool) => tool.name === "explain_streak")!
      assert.isTrue(explain.annotations?.readOnlyHint)
      assert.sameMembers(explain.inputSchema.required as Array<string>, ["programId", "userHash"])
      assert.sameMembers(Object.keys(explain.inputSchema.properties ?? {}), ["programId", "userHash", "from", "to"])
      assert.strictEqual(explain.outputSchema?.type, "object")
      assert.sameMembers(explain.outputSchema?.required as Array<string>, [
        "programId",
        "userHash",
        "policy",
        "current",
        "best",
        "freezes",
        "periods"
      ])
      const listPrograms = tools.find((tool) => tool.name === "list_programs")!
      const item = (listPrograms.outputSchema?.properties as any).programs.items
      assert.include(item.required, "policy")
      const member = tools.find((tool) => tool.name === "get_member_streak")!
      assert.includeMembers(Object.keys(member.outputSchema?.properties ?? {}), ["mode", "freezes", "period"])
    }).pipe(Effect.provide(layer)))
})

describe("repair_streak", () => {
  it.scoped("repairs a missed day for a support agent: it counts as kept, explain_streak shows it repaired; again it is NOT_REPAIRABLE", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      yield* (yield* StreakPolicies.StreakPolicies).setPolicy(t.daily.id, { repairWindowDays: 7 })
      for (const date of ["2026-03-01", "2026-03-02", "2026-03-04"]) {
        yield* TestClock.setTime(noon(date))
        yield* call(client, "record_action", { programId: t.daily.id, userHash: "m1", test: true })
      }
      yield* TestClock.setTime(noon("2026-03-05"))
      const args = { programId: t.daily.id, userHash: "m1", period: "2026-03-03", reason: "ticket 42" }
      const repaired = yield* call(client, "repair_streak", args)
      assert.deepInclude(repaired.structuredContent, { current: 4, best: 4, pending: true })
      const explained = yield* call(client, "explain_streak", { programId: t.daily.id, userHash: "m1" })
      assert.deepStrictEqual(
        (explained.structuredContent as unknown as Ledger).periods.map((p) => `${p.start} ${p.status}`),
        ["2026-03-01 kept", "2026-03-02 kept", "2026-03-03 repaired", "2026-03-04 kept", "2026-03-05 current"]
      )
      const again = yield* call(client, "repair_streak", args)
      assert.isTrue(again.isError)
      assert.deepStrictEqual(texts(again), ["NOT_REPAIRABLE"])
    }).pipe(Effect.provide(layer)))
})
