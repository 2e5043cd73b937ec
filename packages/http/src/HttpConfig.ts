/**
 * Deployment settings the HTTP layer needs (docs/operations.md#configuration): the admin token and
 * the operator switch for insecure webhook URLs. Read from the environment by `layerConfig`.
 */
import { Config, Context, Layer, type Option, type Redacted } from "effect"

export class HttpConfig extends Context.Tag("@streaks/http/HttpConfig")<HttpConfig, {
  /** None: every admin route answers 401 (the server says so at start). */
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** `http://localhost` / `127.0.0.1` subscriptions allowed (development and tests). */
  readonly allowInsecureWebhookUrls: boolean
  /** The service's public base URL (`STREAKS_PUBLIC_URL`) for links it hands out; absent: the request's origin. */
  readonly publicUrl?: string | undefined
}>() {}

export const layer = (config: HttpConfig["Type"]): Layer.Layer<HttpConfig> => Layer.succeed(HttpConfig, config)

export const layerConfig = Layer.effect(
  HttpConfig,
  Config.all({
    adminToken: Config.option(Config.redacted("STREAKS_ADMIN_TOKEN")),
    allowInsecureWebhookUrls: Config.withDefault(Config.boolean("STREAKS_ALLOW_INSECURE_WEBHOOK_URLS"), false),
    publicUrl: Config.map(
      Config.option(Config.string("STREAKS_PUBLIC_URL")),
      (url) => url._tag === "Some" ? url.value.replace(/\/+$/, "") : undefined
    )
  })
)
