import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Ids from "../src/Ids.js"

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"

/** The milliseconds in the first 48 of an id body's bits (its first ten characters hold 50). */
const millisOf = (body: string): number => {
  let value = 0n
  for (const c of body.slice(0, 10)) value = value * 32n + BigInt(CROCKFORD.indexOf(c))
  return Number(value >> 2n)
}

describe("Ids", () => {
  it("an id is its kind's prefix and 26 base32 characters, the first ten the instant it was made", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (millis) => {
      const id = Ids.makeAt("EventId", millis)
      assert.match(id, /^evt_[0-9a-hjkmnp-tv-z]{26}$/)
      assert.strictEqual(millisOf(id.slice(4)), millis)
    }))
  })

  it("ids sort by the instant they were made, and ids of one instant differ", () => {
    const instants = [0, 1, 255, 256, 1_700_000_000_000, 1_700_000_000_001, 2 ** 48 - 1]
    const ids = instants.map((ms) => Ids.makeAt("ProjectId", ms))
    assert.deepStrictEqual([...ids].sort(), ids)
    const many = Array.from({ length: 5000 }, () => Ids.makeAt("EventId", 1_700_000_000_000))
    assert.strictEqual(new Set(many).size, many.length)
    // The random part spreads over the whole alphabet.
    assert.strictEqual(new Set(many.flatMap((id) => [...id.slice(14)])).size, 32)
  })

  it("a secret part is 52 base32 characters, never twice the same", () => {
    const secrets = Array.from({ length: 1000 }, Ids.secretPart)
    for (const s of secrets) assert.match(s, /^[0-9a-hjkmnp-tv-z]{52}$/)
    assert.strictEqual(new Set(secrets).size, secrets.length)
  })
})
