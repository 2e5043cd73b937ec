/**
 * Deployment settings of the MCP worker (docs/mcp.md): the browser origins it answers, and the
 * public address it names in its `WWW-Authenticate` challenge and protected-resource document.
 * Read from the environment by `layerConfig`.
 */
import { Config, type ConfigError, Context, Layer, type Option } from "effect"

export class McpConfig extends Context.Tag("@streaks/mcp/McpConfig")<McpConfig, {
  /**
   * Origins whose requests are served (`scheme://host[:port]`, or a `https://*.example.com`
   * wildcard); a request with any other `Origin` header answers 403. Empty by default: agents
   * call from servers and desktops, which send no `Origin`.
   */
  readonly allowedOrigins: ReadonlyArray<string>
  /**
   * The service's public base URL (`https://streaks.example.com`, no trailing slash). None: taken
   * from each request's `Host` and its scheme (from a trusted proxy, else the connection's).
   */
  readonly baseUrl: Option.Option<string>
}>() {}

export const layer = (config: McpConfig["Type"]): Layer.Layer<McpConfig> => Layer.succeed(McpConfig, config)

/** Comma-separated origins, blanks ignored. */
const origins = Config.map(
  Config.string("STREAKS_MCP_ALLOWED_ORIGINS"),
  (value) => value.split(",").map((origin) => origin.trim()).filter((origin) => origin.length > 0)
)

/** A base URL as configured, without its trailing slashes. */
const baseUrl = (name: string) => Config.map(Config.string(name), (url) => url.replace(/\/+$/, ""))

/**
 * `STREAKS_MCP_ALLOWED_ORIGINS` (comma-separated, default none) and the public address:
 * `STREAKS_PUBLIC_URL`, else `STREAKS_BASE_URL` (its older name), else none.
 */
export const layerConfig: Layer.Layer<McpConfig, ConfigError.ConfigError> = Layer.effect(
  McpConfig,
  Config.all({
    allowedOrigins: Config.withDefault(origins, []),
    baseUrl: Config.option(Config.orElse(baseUrl("STREAKS_PUBLIC_URL"), () => baseUrl("STREAKS_BASE_URL")))
  })
)
