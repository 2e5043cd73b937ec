/**
 * The limits the MCP worker applies when the host provides them (the reference server backs them
 * with `@streaks/http`'s rate limiter): a budget of failed authentications per client address,
 * which never refuses a token that verifies, and a bucket per verified credential. Each answers
 * the `RateLimit` headers to send. Without this service `/mcp` is not limited.
 */
import { Context, type Effect } from "effect"

/** What a limit answers: whether the request goes on, when to retry if not, the headers to send. */
export interface Gate {
  readonly allowed: boolean
  readonly retryAfterSeconds: number
  readonly headers: Readonly<Record<string, string>>
}

export class McpLimits extends Context.Tag("@streaks/mcp/McpLimits")<McpLimits, {
  /** After a token that is missing or did not verify, from the client `address`. */
  readonly failedAuthentication: (address: string) => Effect.Effect<Gate>
  /** After a token verified: `key` names the credential (`api_key:key_…`, `mcp_token:mcp_…`). */
  readonly credential: (key: string) => Effect.Effect<Gate>
  /**
   * The headers of the client `address`'s failed-authentication budget as it stands, spending
   * nothing: for answers given before the token is read (a foreign `Origin`, a token in the URL).
   */
  readonly standing: (address: string) => Effect.Effect<Readonly<Record<string, string>>>
}>() {}
