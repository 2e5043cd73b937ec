/**
 * The statistics of Proof against published numbers (Newcombe 1998, Wilson's interval, chi-square
 * table values, the textbook sample size of a two-proportion test) and against properties every
 * interval must have.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as ProofStatistics from "../src/ProofStatistics.js"

const at4 = (x: number) => Math.round(x * 10_000) / 10_000

describe("wilsonInterval", () => {
  // Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3.
  const published: ReadonlyArray<readonly [x: number, n: number, lower: number, upper: number]> = [
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0, 0.1611],
    [1, 29, 0.0061, 0.1718]
  ]
  for (const [x, n, lower, upper] of published) {
    it(`${x}/${n} has the 95 % score interval ${lower} to ${upper}`, () => {
      const i = ProofStatistics.wilsonInterval(x, n)
      assert.strictEqual(i.estimate, x / n)
      assert.strictEqual(at4(i.lower), lower)
      assert.strictEqual(at4(i.upper), upper)
    })
  }

  it("is NaN for an empty sample or counts out of range", () => {
    assert.isNaN(ProofStatistics.wilsonInterval(0, 0).estimate)
    assert.isNaN(ProofStatistics.wilsonInterval(3, 2).lower)
    assert.isNaN(ProofStatistics.wilsonInterval(-1, 2).upper)
  })

  it("a wider level gives a wider interval", () => {
    const a = ProofStatistics.wilsonInterval(30, 100, 0.9)
    const b = ProofStatistics.wilsonInterval(30, 100, 0.99)
    assert.isTrue(b.lower < a.lower && a.upper < b.upper)
  })
})

describe("differenceInterval (Newcombe 1998, method 10)", () => {
  // Newcombe (1998), "Interval estimation for the difference between independent proportions:
  // comparison of eleven methods", Statistics in Medicine 17, Table II, method 10.
  const published: ReadonlyArray<
    readonly [x1: number, n1: number, x2: number, n2: number, lower: number, upper: number]
  > = [
    [56, 70, 48, 80, 0.0524, 0.3339],
    [9, 10, 3, 10, 0.1705, 0.8090],
    [6, 7, 2, 7, 0.0582, 0.8062],
    [5, 56, 0, 29, -0.0381, 0.1926],
    [0, 10, 0, 20, -0.1611, 0.2775],
    [0, 10, 0, 10, -0.2775, 0.2775],
    [10, 10, 0, 20, 0.6791, 1.0000],
    [10, 10, 0, 10, 0.6075, 1.0000]
  ]
  for (const [x1, n1, x2, n2, lower, upper] of published) {
    it(`${x1}/${n1} − ${x2}/${n2} has the 95 % interval ${lower} to ${upper}`, () => {
      const d = ProofStatistics.differenceInterval(x1, n1, x2, n2)
      assert.closeTo(d.estimate, x1 / n1 - x2 / n2, 1e-15)
      assert.strictEqual(at4(d.lower), lower)
      assert.strictEqual(at4(d.upper), upper)
    })
  }

  it("is NaN when a group is empty", () => {
    assert.isNaN(ProofStatistics.differenceInterval(1, 2, 0, 0).estimate)
  })
})

describe("chi-square and normal tails", () => {
  // Upper-tail critical values of the chi-square distribution (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.4).
  const table: ReadonlyArray<readonly [x: number, df: number, p: number]> = [
    [2.706, 1, 0.1],
    [3.841, 1, 0.05],
    [5.024, 1, 0.025],
    [6.635, 1, 0.01],
    [10.828, 1, 0.001],
    [5.991, 2, 0.05],
    [13.816, 2, 0.001],
    [11.070, 5, 0.05]
  ]
  for (const [x, df, p] of table) {
    it(`P(χ²(${df}) ≥ ${x}) = ${p} to the table's precision`, () => {
      const tail = ProofStatistics.chiSquareUpperTail(x, df)
      // Three decimals of x move the tail by less than 0.5 % of p.
      assert.closeTo(tail, p, p * 0.005)
    })
  }

  it("the 95 % normal quantile is 1.959964 and the tail of 1.959964 is 0.025", () => {
    assert.closeTo(ProofStatistics.zOf(0.95), 1.959964, 1e-6)
    assert.closeTo(ProofStatistics.normalUpperTail(1.959964), 0.025, 1e-7)
    assert.closeTo(ProofStatistics.zOf(0.99), 2.575829, 1e-6)
  })
})

describe("srm", () => {
  it("a 50/50 split of 1000 observed 540:460 gives χ² = 6.4, p ≈ 0.0114", () => {
    const r = ProofStatistics.srm([540, 460], [50, 50])
    assert.closeTo(r.chiSquare, 6.4, 1e-12)
    assert.closeTo(r.pValue, 0.011412, 1e-6)
  })

  it("an exact 10:90 split has χ² = 0 and p = 1; a 20:80 split of 10:90 expected mismatches", () => {
    const exact = ProofStatistics.srm([100, 900], [10, 90])
    assert.strictEqual(exact.chiSquare, 0)
    assert.strictEqual(exact.pValue, 1)
    const off = ProofStatistics.srm([200, 800], [10, 90])
    // (200 − 100)²/100 + (800 − 900)²/900
    assert.closeTo(off.chiSquare, 100 + 100 / 9, 1e-9)
    assert.isBelow(off.pValue, 0.001)
  })

  it("is NaN with nothing observed", () => {
    const r = ProofStatistics.srm([0, 0], [10, 90])
    assert.isNaN(r.chiSquare)
    assert.isNaN(r.pValue)
  })
})

describe("two-proportion z-test and MDE", () => {
  it("the z-test's p-value equals the tail of Pearson's χ² of the 2×2 table (z² = χ²)", () => {
    const [x1, n1, x2, n2] = [56, 70, 48, 80]
    const p = ProofStatistics.twoProportionPValue(x1, n1, x2, n2)
    const cells = [x1, n1 - x1, x2, n2 - x2]
    const rows = [n1, n2]
    const cols = [x1 + x2, n1 + n2 - x1 - x2]
    const total = n1 + n2
    let chi = 0
    for (let r = 0; r < 2; r++) {
      for (let c = 0; c < 2; c++) {
        const e = (rows[r]! * cols[c]!) / total
        chi += (cells[r * 2 + c]! - e) ** 2 / e
      }
    }
    assert.closeTo(p, ProofStatistics.chiSquareUpperTail(chi, 1), 1e-12)
    assert.closeTo(p, 0.00805, 5e-5)
  })

  it("equal rates give p = 1, and a pooled rate of 0 or 1 too", () => {
    assert.closeTo(ProofStatistics.twoProportionPValue(30, 100, 60, 200), 1, 1e-12)
    assert.strictEqual(ProofStatistics.twoProportionPValue(0, 10, 0, 20), 1)
    assert.strictEqual(ProofStatistics.twoProportionPValue(10, 10, 20, 20), 1)
  })

  it("MDE: 392.4 members per group at a pooled rate of 0.5 detect 0.1 (80 % power, α 0.05 two-sided)", () => {
    // The textbook sample size n = (1.959964 + 0.841621)² · 2 · 0.25 / 0.1² = 392.44 per group.
    const n = ((1.959964 + 0.841621) ** 2 * 2 * 0.25) / 0.01
    assert.closeTo(ProofStatistics.minimumDetectableEffect(n, n, 0.5), 0.1, 1e-6)
    assert.isNaN(ProofStatistics.minimumDetectableEffect(0, 10, 0.5))
  })
})

describe("relativeLiftInterval", () => {
  it("30/100 over 20/100 is +50 % with the delta-method half-width 1.96 · √0.1425", () => {
    // var = 0.3·0.7/(100·0.2²) + 0.3²·0.8/(100·0.2³) = 0.0525 + 0.09
    const r = ProofStatistics.relativeLiftInterval(30, 100, 20, 100)
    assert.closeTo(r.estimate, 0.5, 1e-12)
    const half = ProofStatistics.zOf(0.95) * Math.sqrt(0.1425)
    assert.closeTo(r.lower, 0.5 - half, 1e-12)
    assert.closeTo(r.upper, 0.5 + half, 1e-12)
    assert.closeTo(half, 0.73987, 1e-5)
  })

  it("is NaN when the control rate is 0", () => {
    assert.isNaN(ProofStatistics.relativeLiftInterval(3, 10, 0, 10).estimate)
  })
})

describe("cuped", () => {
  // A direct computation over the samples: adjusted values, their sample variances, Welch.
  const reference = (t: ReadonlyArray<readonly [number, number]>, c: ReadonlyArray<readonly [number, number]>) => {
    const all = [...t, ...c]
    const mean = (xs: ReadonlyArray<number>) => xs.reduce((s, x) => s + x, 0) / xs.length
    const mx = mean(all.map(([, x]) => x))
    const my = mean(all.map(([y]) => y))
    const cov = all.reduce((s, [y, x]) => s + (x - mx) * (y - my), 0) / (all.length - 1)
    const vx = all.reduce((s, [, x]) => s + (x - mx) ** 2, 0) / (all.length - 1)
    const theta = cov / vx
    const adjust = (g: ReadonlyArray<readonly [number, number]>) => g.map(([y, x]) => y - theta * (x - mx))
    const variance = (xs: ReadonlyArray<number>) => {
      const m = mean(xs)
      return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1)
    }
    const at = adjust(t)
    const ac = adjust(c)
    return {
      theta,
      treatment: mean(at),
      control: mean(ac),
      se2: variance(at) / at.length + variance(ac) / ac.length,
      raw: variance(t.map(([y]) => y)) / t.length + variance(c.map(([y]) => y)) / c.length
    }
  }
  const t: ReadonlyArray<readonly [number, number]> = [[5, 3], [7, 6], [2, 1], [6, 5], [7, 7], [3, 2], [6, 4]]
  const c: ReadonlyArray<readonly [number, number]> = [[4, 4], [1, 0], [5, 6], [2, 3], [3, 2], [6, 7]]

  it("adjusts each group's mean with the pooled θ and agrees with a computation over the samples", () => {
    const r = ProofStatistics.cuped(ProofStatistics.moments(t), ProofStatistics.moments(c))!
    const ref = reference(t, c)
    assert.closeTo(r.theta, ref.theta, 1e-12)
    assert.closeTo(r.treatment, ref.treatment, 1e-12)
    assert.closeTo(r.control, ref.control, 1e-12)
    assert.closeTo(r.difference.estimate, ref.treatment - ref.control, 1e-12)
    assert.closeTo(r.varianceReduction!, 1 - ref.se2 / ref.raw, 1e-12)
    // Welch–Satterthwaite degrees of freedom and the t quantile.
    const vt = ref.se2 // checked through the half-width: larger than the normal one, finite
    const half = r.difference.upper - r.difference.estimate
    assert.isAbove(half, ProofStatistics.zOf(0.95) * Math.sqrt(vt))
    assert.closeTo(r.difference.estimate - r.difference.lower, half, 1e-12)
  })

  it("a covariate that explains Y removes most of its variance", () => {
    const r = ProofStatistics.cuped(ProofStatistics.moments(t), ProofStatistics.moments(c))!
    assert.isAbove(r.varianceReduction!, 0.5)
  })

  it("with a constant covariate θ is 0 and nothing changes", () => {
    const flat = (g: ReadonlyArray<readonly [number, number]>) => g.map(([y]) => [y, 3] as const)
    const r = ProofStatistics.cuped(ProofStatistics.moments(flat(t)), ProofStatistics.moments(flat(c)))!
    assert.strictEqual(r.theta, 0)
    assert.closeTo(r.varianceReduction!, 0, 1e-12)
  })

  it("the Welch interval of 2 × 50 normal-ish members is close to the normal one", () => {
    const big = (shift: number) =>
      Array.from({ length: 50 }, (_, i) => [((i * 7) % 11) + shift, (i * 7) % 11 + ((i * 3) % 5)] as const)
    const r = ProofStatistics.cuped(ProofStatistics.moments(big(1)), ProofStatistics.moments(big(0)))!
    const ref = reference(big(1), big(0))
    const half = r.difference.upper - r.difference.estimate
    const normal = ProofStatistics.zOf(0.95) * Math.sqrt(ref.se2)
    assert.isAbove(half, normal)
    assert.isBelow(half, normal * 1.03)
  })

  it("is null when a group has fewer than 2 members; varianceReduction null when Y does not vary", () => {
    assert.isNull(ProofStatistics.cuped(ProofStatistics.moments([[1, 1]]), ProofStatistics.moments(c)))
    const same = ProofStatistics.cuped(
      ProofStatistics.moments([[1, 0], [1, 2]]),
      ProofStatistics.moments([[1, 1], [1, 3]])
    )!
    assert.isNull(same.varianceReduction)
    assert.strictEqual(same.difference.lower, same.difference.upper)
  })
})

describe("interval properties", () => {
  const group = fc.integer({ min: 1, max: 400 }).chain((n) => fc.tuple(fc.integer({ min: 0, max: n }), fc.constant(n)))

  it.prop("every interval contains its estimate", [group, group], ([[x1, n1], [x2, n2]]) => {
    for (
      const i of [
        ProofStatistics.wilsonInterval(x1, n1),
        ProofStatistics.differenceInterval(x1, n1, x2, n2),
        ...(x2 > 0 ? [ProofStatistics.relativeLiftInterval(x1, n1, x2, n2)] : [])
      ]
    ) {
      assert.isTrue(i.lower <= i.estimate && i.estimate <= i.upper, JSON.stringify(i))
    }
    const d = ProofStatistics.differenceInterval(x1, n1, x2, n2)
    assert.isTrue(d.lower >= -1 && d.upper <= 1)
  }, { fastCheck: { numRuns: 500 } })

  it.prop(
    "the same rates on k times the members give narrower intervals",
    [group, group, fc.integer({ min: 2, max: 20 })],
    ([[x1, n1], [x2, n2], k]) => {
      const width = (i: ProofStatistics.Interval) => i.upper - i.lower
      assert.isBelow(
        width(ProofStatistics.wilsonInterval(k * x1, k * n1)),
        width(ProofStatistics.wilsonInterval(x1, n1))
      )
      assert.isBelow(
        width(ProofStatistics.differenceInterval(k * x1, k * n1, k * x2, k * n2)),
        width(ProofStatistics.differenceInterval(x1, n1, x2, n2))
      )
      assert.isAtMost(
        ProofStatistics.minimumDetectableEffect(k * n1, k * n2, 0.3),
        ProofStatistics.minimumDetectableEffect(n1, n2, 0.3)
      )
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "swapping the groups negates the difference and mirrors its interval",
    [group, group],
    ([[x1, n1], [x2, n2]]) => {
      const a = ProofStatistics.differenceInterval(x1, n1, x2, n2)
      const b = ProofStatistics.differenceInterval(x2, n2, x1, n1)
      assert.closeTo(a.estimate, -b.estimate, 1e-12)
      assert.closeTo(a.lower, -b.upper, 1e-12)
      assert.closeTo(a.upper, -b.lower, 1e-12)
      assert.strictEqual(
        ProofStatistics.twoProportionPValue(x1, n1, x2, n2),
        ProofStatistics.twoProportionPValue(x2, n2, x1, n1)
      )
      const s = ProofStatistics.srm([n1, n2], [30, 70])
      const r = ProofStatistics.srm([n2, n1], [70, 30])
      assert.closeTo(s.chiSquare, r.chiSquare, 1e-9)
    },
    { fastCheck: { numRuns: 500 } }
  )
})
