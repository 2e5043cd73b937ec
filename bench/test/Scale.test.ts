import { describe, expect, it } from "vitest"
import * as Scale from "../src/scale.js"

describe("sizesOf", () => {
  it("reads BENCH_SCALE's sizes in members, ascending, each a whole number of members per project", () => {
    expect(Scale.sizesOf("10m,1m")).toEqual([1_000_000, 10_000_000])
    expect(Scale.sizesOf("200k")).toEqual([200_000])
    expect(Scale.sizesOf("1m, 1M")).toEqual([1_000_000])
    expect(Scale.sizesOf("10")).toEqual([12])
    for (const size of Scale.sizesOf("1.5m,250k")) expect(size % Scale.PROJECTS).toBe(0)
  })

  it("refuses what is not a size", () => {
    expect(() => Scale.sizesOf("big")).toThrow(/not a size/)
    expect(() => Scale.sizesOf("1g")).toThrow(/not a size/)
  })
})
