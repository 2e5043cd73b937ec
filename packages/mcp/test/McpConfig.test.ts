/**
 * The worker's public address from the environment (docs/mcp.md#configuration): `STREAKS_PUBLIC_URL`
 * wins over its older name `STREAKS_BASE_URL`, trailing slashes go, and neither set means none.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import * as McpConfig from "../src/McpConfig.js"

const baseUrlWith = (entries: ReadonlyArray<readonly [string, string]>) =>
  Effect.map(McpConfig.McpConfig, (config) => config.baseUrl).pipe(
    Effect.provide(McpConfig.layerConfig.pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries))))
    ))
  )

describe("McpConfig.layerConfig", () => {
  it.effect("STREAKS_PUBLIC_URL, else STREAKS_BASE_URL, else none; without trailing slashes", () =>
    Effect.gen(function*() {
      expect(
        yield* baseUrlWith([["STREAKS_PUBLIC_URL", "https://streaks.example.com/"], [
          "STREAKS_BASE_URL",
          "https://old.example.com"
        ]])
      ).toEqual(Option.some("https://streaks.example.com"))
      expect(yield* baseUrlWith([["STREAKS_BASE_URL", "https://old.example.com//"]]))
        .toEqual(Option.some("https://old.example.com"))
      expect(yield* baseUrlWith([])).toEqual(Option.none())
    }))
})
