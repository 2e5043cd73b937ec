/**
 * Subscription URLs reach the public internet only (SSRF guard,
 * docs/webhooks.md#only-the-public-internet): a literal address that is loopback, private,
 * link-local, shared, multicast, unspecified or reserved is refused, as are `localhost` names and
 * names that resolve to such an address (through `HostResolver`); the operator's insecure setting
 * lifts the guard for development.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { HostResolver, Subscriptions } from "../src/Subscriptions.js"
import { httpsOnly, layer, principalOf, tenant } from "./support/services.js"

/** A resolver that knows a few names, and counts the names it was asked. */
const asked: Array<string> = []
const dns: Record<string, ReadonlyArray<string>> = {
  "hooks.example": ["93.184.216.34", "2606:2800:220:1::1"],
  "internal.example": ["10.0.0.7"],
  "mixed.example": ["93.184.216.34", "169.254.169.254"],
  "metadata.example": ["fd00:ec2::254"]
}
const resolver = Layer.succeed(HostResolver, {
  resolve: (host: string) => {
    asked.push(host)
    return Effect.succeed(Option.some(dns[host] ?? []))
  }
})

const withResolver = layer.pipe(Layer.provide(resolver))

const attempt = (url: string, options: { readonly allowInsecureUrls: boolean } = httpsOnly) =>
  Effect.gen(function*() {
    const a = yield* tenant()
    const principal = yield* principalOf(a.apiKey.key)
    return yield* Effect.either(
      (yield* Subscriptions).create(
        principal,
        { programId: a.program.id, url, eventTypes: ["streak.at_risk"] },
        options
      )
    )
  })

describe("Subscription URLs", () => {
  it.effect("a literal loopback, private, link-local, CGNAT, multicast or unspecified address is refused (INVALID_BODY), in any spelling", () =>
    Effect.gen(function*() {
      const refused = [
        "https://127.0.0.1/hook",
        "https://2130706433/hook",
        "https://0x7f000001/hook",
        "https://10.0.0.5/hook",
        "https://172.16.3.4/hook",
        "https://192.168.0.10:8443/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://100.64.1.1/hook",
        "https://224.0.0.251/hook",
        "https://0.0.0.0/hook",
        "https://[::1]/hook",
        "https://[::]/hook",
        "https://[fd00::1]/hook",
        "https://[fe80::1]/hook",
        "https://[ff02::1]/hook",
        "https://[::ffff:10.0.0.1]/hook",
        "https://localhost/hook",
        "https://api.localhost/hook",
        "https://LOCALHOST./hook"
      ]
      for (const url of refused) {
        const result = yield* attempt(url)
        assert.isTrue(result._tag === "Left" && result.left._tag === "InvalidBody", url)
      }
      const ok = yield* attempt("https://93.184.216.34/hook")
      assert.strictEqual(ok._tag, "Right")
    }).pipe(Effect.provide(layer)))

  it.effect("a name is resolved at subscription time: refused when any of its addresses is not public, or when it does not resolve", () =>
    Effect.gen(function*() {
      asked.length = 0
      assert.strictEqual((yield* attempt("https://hooks.example/streaks"))._tag, "Right")
      for (
        const url of [
          "https://internal.example/x",
          "https://mixed.example/x",
          "https://metadata.example/x",
          "https://nowhere.example/x"
        ]
      ) {
        const result = yield* attempt(url)
        assert.isTrue(result._tag === "Left" && result.left._tag === "InvalidBody", url)
      }
      assert.deepStrictEqual(asked, [
        "hooks.example",
        "internal.example",
        "mixed.example",
        "metadata.example",
        "nowhere.example"
      ])
    }).pipe(Effect.provide(withResolver)))

  it.effect("without a resolver (core's default) names are not resolved; literal addresses are still checked", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* attempt("https://internal.example/x"))._tag, "Right")
      assert.strictEqual((yield* attempt("https://10.0.0.5/x"))._tag, "Left")
    }).pipe(Effect.provide(layer)))

  it.effect("with insecure URLs allowed (development), loopback and private hosts are accepted and nothing is resolved", () =>
    Effect.gen(function*() {
      asked.length = 0
      const devMode = { allowInsecureUrls: true }
      for (
        const url of [
          "http://localhost:8080/hook",
          "http://127.0.0.1:9000/hook",
          "https://10.0.0.5/hook",
          "https://internal.example/x"
        ]
      ) {
        assert.strictEqual((yield* attempt(url, devMode))._tag, "Right", url)
      }
      assert.deepStrictEqual(asked, [])
    }).pipe(Effect.provide(withResolver)))
})
