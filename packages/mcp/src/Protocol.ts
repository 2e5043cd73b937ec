/**
 * The MCP side of the worker: a server of the official TypeScript SDK (its low-level `Server`,
 * docs/decisions/0004) that lists the tools and answers their calls for one caller, whichever
 * transport carries it (Streamable HTTP or stdio).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import {
  type CallToolResult,
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError
} from "@modelcontextprotocol/sdk/types.js"
import type { Credentials, Errors } from "@streaks/core"
import { Cause, Effect, Option, Runtime } from "effect"
import * as Tools from "./Tools.js"

/** How the worker names itself in `initialize`. */
export const serverInfo = { name: "streaks", version: "0.1.0" } as const

const instructions = "Streaks tracks members' streaks (consecutive kept periods: days, or weeks or months by the " +
  "program's policy) per program. Start with list_programs for the program ids and policies; then look up a " +
  "member's streak, explain it period by period, see who is at risk of losing theirs in the current period, " +
  "record an action, or read the workspace's usage. A failed call answers one code as its text: " +
  "NOT_FOUND (unknown or out of this credential's reach), INVALID_BODY (a bad argument; a second text says which), " +
  "UNAUTHORIZED, IDEMPOTENCY_KEY_IN_PROGRESS (retry in a second), SERVICE_UNAVAILABLE."

/** Who is calling, asked at each tool call (so a token revoked meanwhile stops working at once). */
export type Caller = Effect.Effect<Credentials.McpPrincipal, Errors.Unauthorized | Errors.StorageError>

const refused = (code: string, message?: string): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: code }, ...(message !== undefined ? [{ type: "text" as const, text: message }] : [])]
})

/**
 * The answer to one call of `tool` from `clientAddress` (what the audit log records of a write):
 * its structured content (also as JSON text, for clients that read only text), or `isError` with
 * the error's code. Storage failures and defects are logged and answered without their details.
 */
export const callTool = (
  caller: Caller,
  tool: Tools.Tool,
  args: unknown,
  clientAddress: string
): Effect.Effect<CallToolResult, never, Tools.Requirements> =>
  caller.pipe(
    Effect.flatMap((principal) => tool.call({ principal, clientAddress }, args)),
    Effect.map((structuredContent): CallToolResult => ({
      content: [{ type: "text", text: JSON.stringify(structuredContent) }],
      structuredContent
    })),
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure) && "code" in failure.value) {
        const error = failure.value
        return Effect.succeed(refused(error.code, error.code === "INVALID_BODY" ? error.message : undefined))
      }
      return Effect.as(
        Effect.logError(`MCP tool ${tool.descriptor.name} failed`, cause),
        refused(Option.isSome(failure) ? "SERVICE_UNAVAILABLE" : "INTERNAL")
      )
    })
  )

/**
 * An SDK server that answers `tools/list` and `tools/call` for `caller` at `clientAddress`,
 * running each call with `runtime` (which holds the core services). Connect it to one transport.
 * An unknown tool is a protocol error (-32602), as the MCP specification has it.
 */
export const make = (
  caller: Caller,
  runtime: Runtime.Runtime<Tools.Requirements>,
  clientAddress: string
): Server => {
  const server = new Server(serverInfo, { capabilities: { tools: {} }, instructions })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: Tools.all.map((tool) => ({ ...tool.descriptor })) }))
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    Option.match(Tools.find(request.params.name), {
      onNone: () => Promise.reject(new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`)),
      onSome: (tool) =>
        Runtime.runPromise(runtime)(callTool(caller, tool, request.params.arguments, clientAddress), {
          signal: extra.signal
        })
    }))
  return server
}
