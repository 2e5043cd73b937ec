import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import * as JsonLimits from "../src/JsonLimits.js"

// An object whose compact JSON is exactly `bytes` long: {"k":"xxx…"} is 8 bytes of overhead.
const objectOf = (bytes: number) => ({ k: "x".repeat(bytes - 8) })

describe("JsonLimits", () => {
  it("a part exactly at its limit passes, one byte over is named", () => {
    for (const [part, limit] of Object.entries(JsonLimits.limits)) {
      assert.strictEqual(JsonLimits.jsonBytes(objectOf(limit)), limit)
      assert.isTrue(Option.isNone(JsonLimits.oversize({ [part]: objectOf(limit) })), part)
      assert.deepStrictEqual(
        JsonLimits.oversize({ [part]: objectOf(limit + 1) }),
        Option.some({ part: part as JsonLimits.Part, bytes: limit + 1, limit })
      )
    }
  })

  it("limits are meta/details/performance 4096, error 2048, consent 1024", () => {
    assert.deepStrictEqual(JsonLimits.limits, {
      meta: 4096,
      details: 4096,
      performance: 4096,
      error: 2048,
      consent: 1024
    })
  })

  it("size is of UTF-8 JSON: multi-byte characters count by their bytes", () => {
    // "é" is 2 bytes in UTF-8: 1000 of them plus quotes is 2002 bytes, within error's 2048…
    assert.isTrue(Option.isNone(JsonLimits.oversize({ error: "é".repeat(1000) })))
    // …and 1100 of them (2202 bytes) is over, although only 1102 characters.
    assert.strictEqual(Option.getOrThrow(JsonLimits.oversize({ error: "é".repeat(1100) })).part, "error")
  })

  it("a string error counts its JSON (with quotes)", () => {
    assert.isTrue(Option.isNone(JsonLimits.oversize({ error: "x".repeat(2046) })))
    assert.strictEqual(Option.getOrThrow(JsonLimits.oversize({ error: "x".repeat(2047) })).bytes, 2049)
  })

  it("other fields are not bounded here; the whole-body cap covers them", () => {
    assert.isTrue(Option.isNone(JsonLimits.oversize({ userHash: "x".repeat(10_000), extra: objectOf(20_000) })))
  })

  it("the first oversize part in meta, details, performance, error, consent order is reported", () => {
    const body = { consent: objectOf(2000), details: objectOf(5000), error: objectOf(3000) }
    assert.strictEqual(Option.getOrThrow(JsonLimits.oversize(body)).part, "details")
  })

  it("non-objects, null, arrays and absent or undefined parts have nothing oversize", () => {
    for (const body of [null, undefined, "x".repeat(10_000), 42, [objectOf(10_000)], {}, { meta: undefined }]) {
      assert.isTrue(Option.isNone(JsonLimits.oversize(body)))
    }
  })

  it("a part that cannot be serialised counts as too large", () => {
    let deep: unknown = 1
    for (let i = 0; i < 200_000; i++) deep = [deep]
    assert.strictEqual(Option.getOrThrow(JsonLimits.oversize({ meta: deep })).bytes, Number.POSITIVE_INFINITY)
  })

  it.effect("check fails with the caller's error for the first oversize part", () =>
    Effect.gen(function*() {
      yield* JsonLimits.check({ meta: { a: 1 } }, () => "unused")
      const exit = yield* Effect.exit(JsonLimits.check({ consent: objectOf(1025) }, (o) => `${o.part}:${o.bytes}`))
      assert.deepStrictEqual(exit, Exit.fail("consent:1025"))
    }))
})
