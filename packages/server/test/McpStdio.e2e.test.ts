/**
 * `streaks mcp --stdio` end to end: the CLI spawned as a local agent would spawn it, talked to with
 * the official SDK's stdio client, on the Postgres database of a reference server that provisions
 * the tenant, answers the REST questions the tools are compared with and reads a repair's audit entry.
 */
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, ConfigProvider, Effect, Layer, Redacted } from "effect"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Main from "../src/Main.js"
import * as ServerConfig from "../src/ServerConfig.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const ADMIN = "mcp-stdio-admin"
const SECRET_KEY = "mcp-stdio-secret-key"

class Database extends Effect.Tag("mcp-stdio/Database")<Database, { readonly url: string }>() {}

/** The reference server on a fresh database: every setting at its default but these. */
const server = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = Redacted.value(yield* PgTest.url)
    const environment = ConfigProvider.fromMap(
      new Map([
        ["DATABASE_URL", url],
        ["STREAKS_ADMIN_TOKEN", ADMIN],
        ["STREAKS_SECRET_KEY", SECRET_KEY],
        ["STREAKS_DB_POOL_SIZE", "4"],
        ["STREAKS_DIRECTORY_CACHE_TTL", "0 seconds"]
      ])
    )
    const config = yield* Effect.withConfigProvider(ServerConfig.config, environment)
    return Layer.merge(Main.layer({ ...config, port: 0 }), Layer.succeed(Database, { url })).pipe(
      Layer.provide(Layer.setConfigProvider(environment))
    )
  })
).pipe(Layer.provide(PgTest.layer), Layer.provideMerge(Layer.setClock(Clock.make())))

const http = (path: string, headers: Record<string, string>, body?: unknown, method?: string) =>
  Effect.flatMap(NodeServer.NodeServer, (s) =>
    Effect.promise(async () => {
      const response = await fetch(`${s.url}${path}`, {
        method: method ?? (body === undefined ? "GET" : "POST"),
        headers: { "content-type": "application/json", ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {})
      })
      const text = await response.text()
      return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
    }))

const admin = (path: string, body?: unknown, method?: string) => http(path, { "x-admin-token": ADMIN }, body, method)

/** A program and an MCP token over its workspace, with an API key for the REST comparisons. */
const tenant = Effect.gen(function*() {
  const workspace = yield* admin("/admin/workspaces", { name: "Stdio", plan: "starter" })
  const project = yield* admin("/admin/projects", { workspaceId: workspace.body.id, name: "Stdio", allowedOrigins: [] })
  const program = yield* admin("/admin/programs", { projectId: project.body.id, name: "Daily", eventKey: "lesson" })
  const key = yield* admin(`/admin/workspaces/${workspace.body.id}/api-keys`, { name: "key" })
  const token = yield* admin("/admin/mcp-tokens", { name: "Desktop agent", workspaceIds: [workspace.body.id] })
  return {
    programId: program.body.id as string,
    apiKey: key.body.key as string,
    token: token.body as { id: string; token: string }
  }
})

/** What the CLI needs besides the token: the server's database and sealing key (it writes no file). */
const env = (databaseUrl: string, token: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  STREAKS_MCP_TOKEN: token,
  STREAKS_SECRET_KEY: SECRET_KEY,
  STREAKS_DB_POOL_SIZE: "2"
})

const command = { command: process.execPath, args: ["--import", "tsx", "src/bin.ts", "mcp", "--stdio"], cwd: root }

layer(server, { timeout: 120_000 })("streaks mcp --stdio", (it) => {
  it.effect("serves an agent the tools on stdin/stdout, with the REST answers, and revocation takes effect at once", () =>
    Effect.gen(function*() {
      const { url } = yield* Database
      const t = yield* tenant
      // Set before the worker starts: it reads programs through a cache of its own.
      expect((yield* admin(`/admin/programs/${t.programId}/policy`, { repairWindowDays: 7 }, "PUT")).status).toBe(200)
      const errors: Array<unknown> = []
      const client = new Client({ name: "desktop-agent", version: "1.0.0" })
      client.onerror = (error) => errors.push(error)
      const transport = new StdioClientTransport({ ...command, env: env(url, t.token.token), stderr: "pipe" })
      let stderr = ""
      transport.stderr?.on("data", (chunk) => (stderr += chunk))
      yield* Effect.promise(() => client.connect(transport))

      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name)).toEqual([
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
      const call = (name: string, args: Record<string, unknown> = {}) =>
        Effect.promise(() => client.callTool({ name, arguments: args }))
      expect((yield* call("list_programs")).structuredContent).toMatchObject({
        programs: [{ id: t.programId, status: "test" }]
      })
      expect((yield* call("record_action", { programId: t.programId, userHash: "m1", test: true })).structuredContent)
        .toEqual({ counted: true })
      const member = yield* http(`/v1/api/programs/${t.programId}/members/m1`, { authorization: `Bearer ${t.apiKey}` })
      expect((yield* call("get_member_streak", { programId: t.programId, userHash: "m1" })).structuredContent).toEqual(
        member.body
      )
      expect(member.body.current).toBe(1)

      // A repair over stdio is in the audit log, by the token, from "stdio" (the agent has no address).
      const day = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString()
      for (const n of [3, 2]) {
        yield* call("record_action", { programId: t.programId, userHash: "m1", test: true, ts: day(n) })
      }
      const repaired = yield* call("repair_streak", {
        programId: t.programId,
        userHash: "m1",
        period: day(1).slice(0, 10),
        reason: "ticket 7"
      })
      expect(repaired.structuredContent).toMatchObject({ current: 4 })
      const audit = yield* http("/v1/api/audit", { authorization: `Bearer ${t.apiKey}` })
      expect(audit.body.entries.filter((e: any) => e.action === "streak.repair")).toMatchObject([
        { actor: { kind: "mcp_token", id: t.token.id }, clientAddress: "stdio", target: t.programId }
      ])

      expect((yield* admin(`/admin/mcp-tokens/${t.token.id}`, undefined, "DELETE")).status).toBe(204)
      const refused = yield* call("list_programs")
      expect([refused.isError, (refused.content as Array<{ text: string }>)[0]?.text]).toEqual([true, "UNAUTHORIZED"])

      // Closing stdin ends the worker (the client would kill it after 2 s otherwise).
      const started = Date.now()
      yield* Effect.promise(() => client.close())
      expect(Date.now() - started, stderr).toBeLessThan(2_000)
      expect(errors, stderr).toEqual([])
    }))

  it.effect("a wrong token stops the worker at start, with the reason on stderr and nothing on stdout", () =>
    Effect.gen(function*() {
      const { url } = yield* Database
      const outcome = yield* Effect.promise(() =>
        new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(command.command, command.args, {
            cwd: command.cwd,
            env: { ...process.env, ...env(url, "svc_mcp_not-a-real-token") },
            stdio: ["pipe", "pipe", "pipe"]
          })
          let stdout = ""
          let stderr = ""
          child.stdout.on("data", (chunk) => (stdout += chunk))
          child.stderr.on("data", (chunk) => (stderr += chunk))
          child.once("exit", (code) => resolve({ code, stdout, stderr }))
        })
      )
      expect(outcome.code, outcome.stderr).toBe(1)
      expect(outcome.stdout).toBe("")
      expect(outcome.stderr).toContain("Unauthorized")
    }))
})
