import { describe, expect, it } from "vitest"
import * as Targets from "../src/targets.js"

const ingest = {
  ratios: [0.85, 0.93, 1.14, 1.13],
  p99s: [66.4, 61.9, 59.7, 60.0],
  baselineP99s: [48.8, 42.1, 45.0, 45.4],
  rssMb: [132, 127, 130, 130]
}

const verdictOf = (verdicts: ReadonlyArray<Targets.Verdict>, start: string) => {
  const found = verdicts.find((v) => v.target.startsWith(start))
  if (found === undefined) throw new Error(`no verdict on ${start}`)
  return found
}

describe("judge", () => {
  it("judges ratios and the p99 at the median of the rounds, so one round on either side does not decide", () => {
    const verdicts = Targets.judge({ ingest })
    // Median of 0.85, 0.93, 1.13, 1.14: 1.03, met though two rounds are under 1.0.
    expect(verdictOf(verdicts, "ingest ≥").met).toBe(true)
    expect(verdictOf(verdicts, "ingest ≥").figures).toMatch(/^1\.03×/)
    const p99 = verdictOf(verdicts, "ingest p99")
    expect(p99.met).toBe(false)
    expect(p99.figures).toMatch(/^61\.0 ms/)
    // The baseline's own p99 is above the bound on this host: the figures say so.
    expect(p99.figures).toContain("the bare baseline's 45.2 ms")
    expect(p99.figures).toContain("itself above 15 ms")
    // Round by round 1.36, 1.47, 1.33, 1.32 times the baseline's: 1.34 at the median.
    expect(p99.figures).toContain("1.34 times the baseline's")
    // Where the bare baseline misses the bound too, the proportion is judged against the 1.25.
    const relative = verdictOf(verdicts, "ingest p99 ≤ 1.25×")
    expect(relative.met).toBe(false)
    expect(relative.figures).toBe("1.34× (rounds: 1.36, 1.47, 1.33, 1.32)")
    const close = Targets.judge({ ingest: { ...ingest, p99s: [43.3, 37.4, 39.3], baselineP99s: [39.4, 37.5, 48.9] } })
    expect(verdictOf(close, "ingest p99 ≤ 15").met).toBe(false)
    expect(verdictOf(close, "ingest p99 ≤ 1.25×").met).toBe(true)
  })

  it("meets the p99 bound at the median even when a first round misses it", () => {
    const fast = { ...ingest, p99s: [18.0, 13.5, 14.8], baselineP99s: [10.7, 8.7, 10.0], ratios: [0.96, 0.92, 1.02] }
    const verdicts = Targets.judge({ ingest: fast })
    expect(verdictOf(verdicts, "ingest p99").met).toBe(true)
    expect(verdictOf(verdicts, "ingest p99").figures).not.toContain("itself above")
    // A host that can meet the absolute bound is judged by it alone.
    expect(verdicts.filter((v) => v.target.startsWith("ingest p99"))).toHaveLength(1)
    expect(verdictOf(verdicts, "ingest ≥").met).toBe(false)
  })

  it("requires every round to keep the RSS bound", () => {
    expect(verdictOf(Targets.judge({ ingest }), "server RSS").met).toBe(true)
    const once = Targets.judge({ ingest: { ...ingest, rssMb: [127, 151, 130, 129] } })
    expect(verdictOf(once, "server RSS").met).toBe(false)
    expect(verdictOf(once, "server RSS").figures).toBe("127–151 MB")
    expect(verdictOf(Targets.judge({ ingest: { ...ingest, rssMb: [] } }), "server RSS").met).toBeUndefined()
  })

  it("judges the sweeps by their bounds and leaves out what the run did not measure", () => {
    const verdicts = Targets.judge({
      state: { ratios: [1.21, 1.26, 1.23] },
      sweep: { dueSeconds: 10.4, emptyMillis: 3 }
    })
    expect(verdicts.map((v) => [v.target.split(" ")[0], v.met])).toEqual([
      ["GET", true],
      ["due", false],
      ["sweep", true]
    ])
    expect(Targets.judge({})).toEqual([])
  })
})

describe("table", () => {
  it("marks a missed target in bold and an unjudged one with a dash", () => {
    const lines = Targets.table([
      { target: "a", figures: "1", met: true },
      { target: "b", figures: "2", met: false },
      { target: "c", figures: "3", met: undefined }
    ])
    expect(lines.slice(2)).toEqual(["| a | 1 | yes |", "| b | 2 | **no** |", "| c | 3 | - |"])
  })
})
