/**
 * Array parameters are sent as literals that this adapter builds itself (`internal/arrayLiteral.ts`):
 * the text must be node-postgres's own, character for character, for every kind of element.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { createRequire } from "node:module"
import * as ArrayLiteral from "../src/internal/arrayLiteral.js"

const pgUtils = createRequire(import.meta.url)("pg/lib/utils") as { readonly prepareValue: (value: unknown) => unknown }

// Strings drawn mostly from the characters a literal must treat with care.
const tricky = fc.stringOf(fc.constantFrom("a", "é", "😀", "\"", "\\", ",", "{", "}", " ", "'", "N", "U", "L"), {
  maxLength: 8
})
const element = fc.oneof(
  tricky,
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.bigInt(),
  fc.constant(null),
  fc.constant(undefined)
)

describe("ArrayLiteral", () => {
  it("builds node-postgres's literal for arrays of strings, numbers, booleans, bigints and nulls", () => {
    fc.assert(
      fc.property(fc.array(element, { maxLength: 30 }), (values) => {
        expect(ArrayLiteral.literal(values)).toBe(pgUtils.prepareValue(values))
      }),
      { numRuns: 2000 }
    )
  })

  it("keeps the common cases exact: empty, plain, holes, escapes", () => {
    for (
      const values of [
        [],
        ["a", "b"],
        [1, 2.5, -0],
        [true, false],
        ["say \"hi\"", "C:\\x"],
        ["", "NULL", null],
        new Array(2)
      ]
    ) {
      expect(ArrayLiteral.literal(values)).toBe(pgUtils.prepareValue(values))
    }
  })

  it("leaves arrays of other values to node-postgres", () => {
    expect(ArrayLiteral.literal([new Date(0)])).toBeUndefined()
    expect(ArrayLiteral.literal([["nested"]])).toBeUndefined()
    expect(ArrayLiteral.literal([{ a: 1 }])).toBeUndefined()
    expect(ArrayLiteral.literal([Buffer.from("x")])).toBeUndefined()
  })

  it("replaces only the array parameters it can build, and returns the same list when there are none", () => {
    const plain = ["a", 1, null]
    expect(ArrayLiteral.params(plain)).toBe(plain)
    const dates = [[new Date(0)]]
    expect(ArrayLiteral.params(dates)).toBe(dates)
    const mixed = ["x", ["a", null], [new Date(0)]]
    const out = ArrayLiteral.params(mixed)
    expect(out).toEqual(["x", "{\"a\",NULL}", mixed[2]])
    expect(mixed[1]).toEqual(["a", null])
  })
})
