/**
 * Text hygiene of the HttpApi routes, below the error mapping: the same rule as
 * `EventInput.isCleanText` at any depth a 64 KiB body can reach, and malformed path escapes read
 * as the raw text they are.
 */
import { assert, describe, it } from "@effect/vitest"
import { EventInput } from "@streaks/core"
import * as TextHygiene from "../src/TextHygiene.js"

const nested = (depth: number, inner: unknown): unknown => {
  let value = inner
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

describe("TextHygiene", () => {
  it("cleanJson refuses what isCleanText refuses: U+0000 or an unpaired surrogate in a value or a key", () => {
    const samples: Array<unknown> = [
      { a: "ok", b: [1, true, null, { c: "fine" }] },
      { a: "nul\u0000" },
      { meta: { deep: [["\ud800"]] } },
      { ["key\udc00"]: 1 },
      "plain",
      42
    ]
    for (const sample of samples) {
      assert.strictEqual(TextHygiene.cleanJson(sample), EventInput.isCleanText(sample), JSON.stringify(sample))
    }
  })

  it("cleanJson answers for a body nested as deep as 64 KiB allow (no stack overflow)", () => {
    const depth = 32_000
    assert.isTrue(TextHygiene.cleanJson(JSON.parse(`{"meta":{"d":${"[".repeat(depth)}${"]".repeat(depth)}}}`)))
    assert.isFalse(TextHygiene.cleanJson({ meta: nested(depth, "\u0000") }))
  })

  it("a malformed escape in a path segment is routed as its raw text; other URLs are kept as they are", () => {
    assert.strictEqual(TextHygiene.rawMalformedEscapes("/v1/webhook/%E0%A4%A/e"), "/v1/webhook/%25E0%25A4%25A/e")
    assert.strictEqual(
      decodeURIComponent(TextHygiene.rawMalformedEscapes("/v1/webhook/site_%E0%A4%A/e?x=%41").split("/")[3]!),
      "site_%E0%A4%A"
    )
    assert.strictEqual(TextHygiene.rawMalformedEscapes("/v1/webhook/%/e?x=1"), "/v1/webhook/%25/e?x=1")
    for (const url of ["/v1/state?siteKey=%E0%A4%A", "/v1/webhook/site_%C3%A9/e", "/health"]) {
      assert.strictEqual(TextHygiene.rawMalformedEscapes(url), url)
    }
    assert.isTrue(TextHygiene.cleanUrl("/v1/webhook/%E0%A4%A/e"))
    assert.isFalse(TextHygiene.cleanUrl("/v1/webhook/%00/e"))
  })
})
