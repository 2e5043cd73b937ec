import { describe, expect, it } from "vitest"
import * as Load from "../src/load.js"

describe("percentileOf", () => {
  it("takes the smallest latency whose running count reaches the rank, as wrk does", () => {
    // 100 requests: 97 at 1 ms, 2 at 10 ms, 1 at 40 ms (microseconds in, milliseconds out).
    const latencies = new Map([[40_000, 1], [1_000, 97], [10_000, 2]])
    expect(Load.percentileOf(latencies, 50)).toBe(1)
    expect(Load.percentileOf(latencies, 98)).toBe(10)
    expect(Load.percentileOf(latencies, 99.9)).toBe(40)
  })

  it("reads the slices of an interleaved run as one distribution, not as an average of their percentiles", () => {
    // A fast slice serves twice the requests of a slow one. Their p99s are 5 and 60 ms; over all
    // 3,000 requests, the p99 is the slow slice's body and the p50 the fast one's.
    const fast = [[2_000, 1_980], [5_000, 20]] as const
    const slow = [[20_000, 990], [60_000, 10]] as const
    const merged = new Map<number, number>()
    for (const [micros, count] of [...fast, ...slow]) merged.set(micros, (merged.get(micros) ?? 0) + count)
    expect(Load.percentileOf(merged, 50)).toBe(2)
    expect(Load.percentileOf(merged, 99)).toBe(20)
    expect(Load.percentileOf(merged, 99.9)).toBe(60)
    expect(Load.percentileOf(new Map(), 99)).toBe(0)
  })
})
