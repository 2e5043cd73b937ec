/**
 * The reference server for end-to-end tests: `Main.layer` on a free port and the test database,
 * configured as the command would be from an environment holding `settings` and `DATABASE_URL`.
 */
import * as PgTest from "@streaks/storage-pg/PgTest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as Main from "../../src/Main.js"
import * as ServerConfig from "../../src/ServerConfig.js"

export const layer = (settings: Readonly<Record<string, string>>) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const url = Redacted.value(yield* PgTest.url)
      const environment = ConfigProvider.fromMap(new Map([["DATABASE_URL", url], ...Object.entries(settings)]))
      const config = yield* Effect.withConfigProvider(ServerConfig.config, environment)
      return Main.layer({ ...config, port: 0 }).pipe(Layer.provide(Layer.setConfigProvider(environment)))
    })
  )
