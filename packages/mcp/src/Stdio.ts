/**
 * The MCP worker over stdio (`streaks mcp --stdio`, docs/mcp.md), for a local agent that starts it
 * as a child process with one token (`STREAKS_MCP_TOKEN`). The token is checked at start, so a
 * wrong one stops the worker with a message before the agent talks to it, and again at every call,
 * so a token revoked meanwhile stops working at once.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { Credentials, type Errors } from "@streaks/core"
import { Effect } from "effect"
import type { Readable, Writable } from "node:stream"
import * as Protocol from "./Protocol.js"
import type * as Tools from "./Tools.js"

export interface Options {
  /** Default: the process's stdin. The worker ends when it ends (the agent closed it). */
  readonly stdin?: Readable | undefined
  /** Default: the process's stdout, which must carry nothing else (logs go to stderr). */
  readonly stdout?: Writable | undefined
}

/** The client address the audit log records for a write over stdio: the agent has no network address. */
export const clientAddress = "stdio"

/**
 * Serves the agent on stdin/stdout until stdin ends or the fiber is interrupted. Fails at once
 * with Unauthorized when `token` is not a valid MCP token, API key or OAuth token.
 */
export const run = (
  token: string,
  options: Options = {}
): Effect.Effect<void, Errors.Unauthorized | Errors.StorageError, Tools.Requirements> =>
  Effect.gen(function*() {
    const caller = (yield* Credentials.Credentials).authenticateMcp(`Bearer ${token}`)
    yield* caller
    const runtime = yield* Effect.runtime<Tools.Requirements>()
    const stdin = options.stdin ?? process.stdin
    const stdout = options.stdout ?? process.stdout
    yield* Effect.acquireUseRelease(
      Effect.sync(() => Protocol.make(caller, runtime, clientAddress)),
      (server) =>
        Effect.async<void>((resume) => {
          const ended = () => resume(Effect.void)
          stdin.once("end", ended)
          server.onclose = ended
          server.connect(new StdioServerTransport(stdin, stdout)).catch((cause) => resume(Effect.die(cause)))
          return Effect.sync(() => stdin.off("end", ended))
        }),
      (server) => Effect.promise(() => server.close())
    )
  })
