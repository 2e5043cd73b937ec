/**
 * The tools on the in-memory store, through the official SDK's client linked to the worker's
 * server in process (`InMemoryTransport`): what `tools/list` publishes, who `list_at_risk` lists and
 * in which order, and the error texts a caller relies on. HTTP, Postgres and the answers compared
 * with the REST API's are covered end to end by packages/server's MCP tests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Credentials, Experiments, OutboxSignal, Provisioning, SecretBox, Services } from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { Effect, Layer, TestClock } from "effect"
import * as Protocol from "../src/Protocol.js"
import type * as Tools from "../src/Tools.js"

const layer = Services.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(MemoryStorage.layer, SecretBox.layerEphemeral, OutboxSignal.layerNoop))
)

/** Tuesday 2026-03-10, 12:00 UTC. */
const NOW = Date.UTC(2026, 2, 10, 12)
const DAY = 86_400_000
const daysAgo = (n: number) => new Date(NOW - n * DAY).toISOString()

/** A live program in a workspace, and a token of each kind over that workspace. */
const tenant = (name = "Acme") =>
  Effect.gen(function*() {
    const admin = yield* Provisioning.Provisioning
    const workspace = yield* admin.createWorkspace({ name, plan: "starter" })
    const { project } = yield* admin.createProject({ workspaceId: workspace.id, name, allowedOrigins: [] })
    const { program } = yield* admin.createProgram({
      projectId: project.id,
      name: "Daily lesson",
      eventKey: "lesson",
      milestones: []
    })
    yield* admin.setProgramStatus(program.id, "live")
    const apiKey = yield* admin.createApiKey(workspace.id, "key")
    const mcp = yield* admin.createMcpToken({ name: "agent", workspaceIds: [workspace.id] })
    return { workspace, project, program, apiKey: apiKey.key, mcpToken: mcp.token }
  })

/** An SDK client talking to the worker's server as the holder of `token`. */
const connect = (token: string) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<Tools.Requirements>()
    const caller = (yield* Credentials.Credentials).authenticateMcp(`Bearer ${token}`)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    const server = Protocol.make(caller, runtime, "192.0.2.1")
    const client = new Client({ name: "test", version: "1.0.0" })
    yield* Effect.promise(() => server.connect(serverSide))
    yield* Effect.promise(() => client.connect(clientSide))
    yield* Effect.addFinalizer(() => Effect.promise(() => client.close()))
    return client
  })

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }))

const texts = (result: Record<string, unknown>) =>
  (result["content"] as ReadonlyArray<{ readonly type: string; readonly text?: string }>).map((c) => c.text)

describe("tools/list", () => {
  it.scoped("lists the nine tools, each with an object input and output schema; only record_action and repair_streak write", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((tool) => tool.name), [
        "list_programs",
        "get_member_streak",
        "explain_streak",
        "simulate_policy",
        "record_action",
        "repair_streak",
        "list_at_risk",
        "get_usage",
        "get_experiment_report"
      ])
      for (const tool of tools) {
        assert.strictEqual(tool.inputSchema.type, "object", tool.name)
        assert.strictEqual(tool.outputSchema?.type, "object", tool.name)
        assert.strictEqual(
          tool.annotations?.readOnlyHint,
          tool.name !== "record_action" && tool.name !== "repair_streak",
          tool.name
        )
      }
      const record = tools.find((tool) => tool.name === "record_action")!
      assert.sameMembers(record.inputSchema.required as Array<string>, ["programId", "userHash"])
      assert.sameMembers(Object.keys(record.inputSchema.properties ?? {}), [
        "programId",
        "userHash",
        "ts",
        "idempotencyKey",
        "test"
      ])
    }).pipe(Effect.provide(layer)))
})

describe("list_at_risk", () => {
  it.scoped("lists live members whose streak is alive and whose today is not yet kept, longest first", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const t = yield* tenant()
      const client = yield* connect(t.apiKey)
      const act = (userHash: string, ts: string, test = false) =>
        call(client, "record_action", { programId: t.program.id, userHash, ts, test })
      for (const day of [3, 2, 1]) yield* act("three-days", daysAgo(day))
      yield* act("one-day", daysAgo(1))
      for (const day of [2, 1, 0]) yield* act("kept-today", daysAgo(day))
      yield* act("broken", daysAgo(2))
      yield* act("test-ledger", daysAgo(1), true)
      const listed = yield* call(client, "list_at_risk", { programId: t.program.id })
      assert.deepStrictEqual(listed.structuredContent, {
        members: [
          { userHash: "three-days", current: 3, periodEnd: "2026-03-10" },
          { userHash: "one-day", current: 1, periodEnd: "2026-03-10" }
        ]
      })
      const first = yield* call(client, "list_at_risk", { programId: t.program.id, limit: 1 })
      assert.deepStrictEqual(first.structuredContent, {
        members: [{ userHash: "three-days", current: 3, periodEnd: "2026-03-10" }]
      })
    }).pipe(Effect.provide(layer)))

  it.scoped("a limit outside 1..500 is INVALID_BODY", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      for (const limit of [0, 501, 2.5, "10"]) {
        const result = yield* call(client, "list_at_risk", { programId: t.program.id, limit })
        assert.isTrue(result.isError, String(limit))
        assert.strictEqual(texts(result)[0], "INVALID_BODY")
      }
    }).pipe(Effect.provide(layer)))
})

describe("get_experiment_report", () => {
  it.scoped("answers the running experiment, or the one named, with its report; none running is NOT_FOUND", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW - 20 * DAY)
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const none = yield* call(client, "get_experiment_report", { programId: t.program.id })
      assert.deepStrictEqual([none.isError, texts(none)], [true, ["NOT_FOUND"]])
      const experiments = yield* Experiments.Experiments
      const started = yield* experiments.start(t.program.id, 20)
      for (const ago of [19, 17]) {
        yield* TestClock.setTime(NOW - ago * DAY)
        for (let m = 0; m < 12; m++) {
          const done = yield* call(client, "record_action", { programId: t.program.id, userHash: `m${m}` })
          assert.isUndefined(done.isError)
        }
      }
      yield* TestClock.setTime(NOW)
      const result = yield* call(client, "get_experiment_report", { programId: t.program.id })
      assert.isUndefined(result.isError)
      const report = result.structuredContent as Record<string, any>
      assert.strictEqual(report["id"], started.id)
      assert.deepStrictEqual(report, yield* experiments.current(t.program.id))
      assert.strictEqual(report["report"].srm.control + report["report"].srm.treatment, 12)
      assert.deepStrictEqual(report["report"].horizons.map((h: { horizon: number }) => h.horizon), [1, 7, 14, 30])
      // Enrolled 19 days ago and back 2 days later: retained at h = 1 (everyone matured), not at 7.
      const h1 = report["report"].horizons[0]
      assert.strictEqual(h1.control.n + h1.treatment.n, 12)
      assert.strictEqual(h1.control.retained + h1.treatment.retained, 12)
      yield* experiments.stop(t.program.id)
      const named = yield* call(client, "get_experiment_report", { programId: t.program.id, experimentId: started.id })
      assert.strictEqual((named.structuredContent as Record<string, unknown>)["endedAt"], new Date(NOW).toISOString())
      const unknown = yield* call(client, "get_experiment_report", { programId: t.program.id, experimentId: "exp_x" })
      assert.deepStrictEqual(texts(unknown), ["NOT_FOUND"])
    }).pipe(Effect.provide(layer)))
})

describe("errors", () => {
  it.scoped("a program of another workspace and an unknown one both answer NOT_FOUND, and nothing else", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant("Other")
      const client = yield* connect(t.mcpToken)
      for (const programId of [other.program.id, "prg_unknown"]) {
        for (
          const [name, args] of [
            ["get_member_streak", { programId, userHash: "m1" }],
            ["explain_streak", { programId, userHash: "m1" }],
            ["simulate_policy", { programId, policy: {} }],
            ["record_action", { programId, userHash: "m1" }],
            ["repair_streak", { programId, userHash: "m1", period: "2026-01-01", reason: "why" }],
            ["list_at_risk", { programId }],
            ["get_experiment_report", { programId }]
          ] as const
        ) {
          const result = yield* call(client, name, args)
          assert.isTrue(result.isError, `${name} ${programId}`)
          assert.deepStrictEqual(texts(result), ["NOT_FOUND"], `${name} ${programId}`)
          assert.isUndefined(result.structuredContent)
        }
      }
    }).pipe(Effect.provide(layer)))

  it.scoped("a bad or unknown argument is INVALID_BODY with a second text naming it", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const client = yield* connect(t.mcpToken)
      const cases = [
        ["get_member_streak", { programId: t.program.id }, "userHash"],
        ["get_member_streak", { programId: t.program.id, userHash: "a@b.example" }, "userHash"],
        ["record_action", { programId: t.program.id, userHash: "m1", ts: "yesterday" }, "ts"],
        ["record_action", { programId: t.program.id, userHash: "m1", colour: "red" }, "colour"],
        ["get_usage", { month: "2026-3" }, "month"]
      ] as const
      for (const [name, args, field] of cases) {
        const result = yield* call(client, name, args)
        assert.isTrue(result.isError, name)
        const [code, message] = texts(result)
        assert.strictEqual(code, "INVALID_BODY", `${name} ${JSON.stringify(args)}`)
        assert.include(message, field)
      }
    }).pipe(Effect.provide(layer)))

  it.scoped("a token revoked after the client connected gets UNAUTHORIZED at its next call", () =>
    Effect.gen(function*() {
      const admin = yield* Provisioning.Provisioning
      const t = yield* tenant()
      const token = yield* admin.createMcpToken({ name: "short-lived", workspaceIds: [t.workspace.id] })
      const client = yield* connect(token.token)
      assert.isUndefined((yield* call(client, "list_programs", {})).isError)
      yield* admin.revokeMcpToken(token.id)
      assert.deepStrictEqual(texts(yield* call(client, "list_programs", {})), ["UNAUTHORIZED"])
    }).pipe(Effect.provide(layer)))
})
