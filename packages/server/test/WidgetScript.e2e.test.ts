/**
 * The reference server serves the display widget (docs/widget.md): the composition root
 * (`Main.layer`) answers `GET /widget.js` with the module that `@streaks/widget` built.
 */
import { expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import widget from "@streaks/widget/source"
import { Clock, ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as Main from "../src/Main.js"
import * as ServerConfig from "../src/ServerConfig.js"

const server = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = yield* PgTest.url
    const env = new Map([["DATABASE_URL", Redacted.value(url)], ["STREAKS_SECRET_KEY", "widget-e2e-secret-key"]])
    const config = yield* Effect.withConfigProvider(ServerConfig.config, ConfigProvider.fromMap(env))
    return Main.layer({ ...config, port: 0 })
  })
).pipe(Layer.provide(PgTest.layer), Layer.provide(Layer.setClock(Clock.make())))

layer(server, { timeout: "120 seconds" })("GET /widget.js on the reference server", (it) => {
  it.effect("answers the built widget module as text/javascript, cacheable, to any origin", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const response = yield* Effect.promise(() =>
        fetch(`${url}/widget.js`, { headers: { origin: "https://shop.example" } })
      )
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(response.headers.get("cache-control")).toBe("public, max-age=300")
      expect(response.headers.get("access-control-allow-origin")).toBe("*")
      expect(response.headers.get("etag")).toMatch(/^".+"$/)
      expect(yield* Effect.promise(() => response.text())).toBe(widget)
      expect(widget).toContain("streak-widget")
    }))
})
