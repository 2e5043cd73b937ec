/**
 * Secrets are compared in constant time (docs/api.md#secrets): the admin token, server tokens and webhook
 * secrets go through `crypto.timingSafeEqual` on fixed-length digests when real requests carry
 * them; and no source file compares a secret with `===`. (Customer API keys, OAuth and MCP tokens
 * are looked up by their SHA-256 hash, so no comparison of the secret happens in the service.)
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import crypto from "node:crypto"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { request, serverEvent, tenant, layer as testServer, webhookEvent } from "./support/TestServer.js"

/** Every call of `timingSafeEqual`, by whoever calls it (named imports see the replacement too). */
const compared: Array<{ readonly a: number; readonly b: number }> = []
const original = crypto.timingSafeEqual
crypto.timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
  compared.push({ a: a.byteLength, b: b.byteLength })
  return original(a, b)
}
syncBuiltinESMExports()

/** Calls of `timingSafeEqual` made while `self` runs. */
const comparisons = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const from = compared.length
    yield* self
    return compared.slice(from)
  })

layer(testServer(), { timeout: 120_000 })("constant-time comparisons on real requests", (it) => {
  it.effect("the admin token, a server token and a webhook secret are compared with timingSafeEqual on 32-byte digests", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const adminGuess = yield* comparisons(
        request("/admin/workspaces", { headers: { "x-admin-token": "a-guess" }, body: { name: "w" } })
      )
      const serverGuess = yield* comparisons(
        serverEvent(t, { userHash: "m" }, { "x-streak-server-token": `${t.serverToken}0` })
      )
      const webhookGuess = yield* comparisons(webhookEvent(t, { userHash: "m" }, `${t.webhookSecret}0`))
      for (
        const [name, calls] of [["admin", adminGuess], ["server", serverGuess], ["webhook", webhookGuess]] as const
      ) {
        assert.isAtLeast(calls.length, 1, name)
        assert.isTrue(calls.every((c) => c.a === 32 && c.b === 32), name)
      }
    }))
})

describe("source audit", () => {
  const root = fileURLToPath(new URL("../../..", import.meta.url))
  const sources = (dir: string): Array<string> =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name)
      if (name === "node_modules" || name === "dist" || name === "build") return []
      return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") ? [path] : []
    })
  const files = ["packages", "examples"].flatMap((d) =>
    readdirSync(join(root, d)).map((p) => join(root, d, p, "src")).filter((p) => {
      try {
        return statSync(p).isDirectory()
      } catch {
        return false
      }
    })
  ).flatMap(sources)

  it("no secret is compared with === or !== (only presence checks, lengths and stored hashes)", () => {
    const secretish = /secret|token|signature|password/i
    // Not a comparison of secrets: absence and emptiness, lengths, the hash a credential is stored under (looked up by it).
    const harmless = /^(undefined|null|""|\d+|.*\.length|.*Hash|open)$/
    const offenders: Array<string> = []
    for (const file of files) {
      readFileSync(file, "utf8").split("\n").forEach((line, i) => {
        if (/^\s*(\/\/|\*)/.test(line)) return
        for (const m of line.matchAll(/([\w.$[\]"'`]+)\s*(?:===|!==)\s*([\w.$[\]"'`]+)/g)) {
          const [left, right] = [m[1]!, m[2]!]
          if ((secretish.test(left) || secretish.test(right)) && !harmless.test(left) && !harmless.test(right)) {
            offenders.push(`${file.slice(root.length)}:${i + 1}: ${line.trim()}`)
          }
        }
      })
    }
    assert.isAbove(files.length, 50)
    assert.deepStrictEqual(offenders, [])
  })

  it("the modules that compare secrets use timingSafeEqual", () => {
    for (
      const file of [
        "packages/http/src/Auth.ts",
        "packages/core/src/Tokens.ts",
        "packages/webhooks/src/Signature.ts"
      ]
    ) {
      assert.include(readFileSync(join(root, file), "utf8"), "timingSafeEqual", file)
    }
  })
})
