/**
 * Text hygiene of the HttpApi routes, below the error mapping: the same rule as
 * `EventInput.isCleanText` at any depth a 64 KiB body can reach, and URLs whose path or query does
 * not percent-decode to clean text.
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

  it("cleanUrl refuses a malformed escape, bytes that are not UTF-8 and U+0000, in a path segment or the query", () => {
    for (
      const url of [
        "/v1/webhook/%E0%A4%A/e",
        "/v1/webhook/site_%/e",
        "/v1/webhook/%G1/e",
        "/v1/webhook/%00/e",
        "/v1/state?userHash=a%ED%A0%80",
        "/v1/state?userHash=%FF",
        "/v1/state?userHash=%",
        "/v1/state?user%E0Hash=1",
        "/v1/state?x=%00",
        "/v1/state?flag&x=%C3",
        "/v1/api/programs/%ED%A0%80/members/m"
      ]
    ) assert.isFalse(TextHygiene.cleanUrl(url), url)
    for (
      const url of [
        "/health",
        "/v1/webhook/site_%C3%A9/e",
        "/v1/state?siteKey=s&userHash=a+b&event=%F0%9F%94%A5",
        "/v1/state?flag&x=",
        "/v1/state?",
        "/v1/api/programs/p%2Fq/members/m"
      ]
    ) assert.isTrue(TextHygiene.cleanUrl(url), url)
  })
})
