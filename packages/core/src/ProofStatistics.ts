/**
 * The statistics of a Proof report, over counts and sums: Wilson and Newcombe intervals for
 * rates, the two-proportion z-test, the detectable effect, the sample-ratio check and CUPED.
 * Pure functions; the distribution functions come from stdlib (docs/decisions/0017).
 */
import normalCdf from "@stdlib/stats-base-dists-normal-cdf"
import normalQuantile from "@stdlib/stats-base-dists-normal-quantile"
import gammainc from "@stdlib/math-base-special-gammainc"
import tQuantile from "@stdlib/stats-base-dists-t-quantile"

/** An estimate with the bounds of its interval. */
export interface Interval {
  readonly estimate: number
  readonly lower: number
  readonly upper: number
}

/** The goodness-of-fit of observed counts against expected shares. */
export interface SampleRatio {
  readonly chiSquare: number
  readonly pValue: number
}

const nan: Interval = { estimate: NaN, lower: NaN, upper: NaN }

/** The two-sided standard normal quantile of a confidence level (1.959964… for 0.95). */
export const zOf = (level: number): number => normalQuantile(1 - (1 - level) / 2, 0, 1)

/** P(Z ≥ z) for a standard normal Z, accurate far into the tail. */
export const normalUpperTail = (z: number): number => normalCdf(-z, 0, 1)

/** P(X ≥ x) for X chi-square with `df` degrees of freedom (the regularized upper incomplete gamma). */
export const chiSquareUpperTail = (x: number, df: number): number => x <= 0 ? 1 : gammainc(x / 2, df / 2, true, true)

/**
 * Wilson's score interval for the proportion x / n (Wilson 1927; Newcombe 1998, method 3),
 * without continuity correction. `n` must be ≥ 1 and 0 ≤ x ≤ n; otherwise every field is NaN.
 */
export const wilsonInterval = (x: number, n: number, level = 0.95): Interval => {
  if (!(n >= 1) || !(x >= 0) || x > n) return nan
  const z = zOf(level)
  const z2 = z * z
  const p = x / n
  const center = (x + z2 / 2) / (n + z2)
  const half = (z / (n + z2)) * Math.sqrt((x * (n - x)) / n + z2 / 4)
  // At x = 0 or x = n one bound is the estimate itself; rounding must not put it past.
  return {
    estimate: p,
    lower: x === 0 ? 0 : Math.min(p, center - half),
    upper: x === n ? 1 : Math.max(p, center + half)
  }
}

/**
 * The difference of two independent proportions x1/n1 − x2/n2 (group 1 minus group 2) with
 * Newcombe's hybrid score interval (Newcombe 1998, method 10: Wilson intervals per group,
 * combined by square-and-add). Both n must be ≥ 1; otherwise every field is NaN.
 */
export const differenceInterval = (x1: number, n1: number, x2: number, n2: number, level = 0.95): Interval => {
  const a = wilsonInterval(x1, n1, level)
  const b = wilsonInterval(x2, n2, level)
  if (Number.isNaN(a.estimate) || Number.isNaN(b.estimate)) return nan
  const d = a.estimate - b.estimate
  return {
    estimate: d,
    lower: d - Math.sqrt((a.estimate - a.lower) ** 2 + (b.upper - b.estimate) ** 2),
    upper: d + Math.sqrt((a.upper - a.estimate) ** 2 + (b.estimate - b.lower) ** 2)
  }
}

/**
 * Pearson's chi-square goodness of fit of `observed` counts against `expectedShares` (any
 * positive weights; normalised), with k − 1 degrees of freedom: the sample-ratio-mismatch check.
 * With no observation at all both fields are NaN.
 */
export const srm = (observed: ReadonlyArray<number>, expectedShares: ReadonlyArray<number>): SampleRatio => {
  const total = observed.reduce((s, o) => s + o, 0)
  const weight = expectedShares.reduce((s, w) => s + w, 0)
  if (!(total > 0) || !(weight > 0) || observed.length !== expectedShares.length || observed.length < 2) {
    return { chiSquare: NaN, pValue: NaN }
  }
  let chiSquare = 0
  for (let i = 0; i < observed.length; i++) {
    const expected = (total * expectedShares[i]!) / weight
    chiSquare += (observed[i]! - expected) ** 2 / expected
  }
  return { chiSquare, pValue: chiSquareUpperTail(chiSquare, observed.length - 1) }
}

/**
 * The two-sided p-value of the two-proportion z-test of x1/n1 against x2/n2, with the pooled rate
 * in the standard error. When the pooled rate is 0 or 1 the groups cannot differ: 1. Both n ≥ 1.
 */
export const twoProportionPValue = (x1: number, n1: number, x2: number, n2: number): number => {
  if (!(n1 >= 1) || !(n2 >= 1)) return NaN
  const pooled = (x1 + x2) / (n1 + n2)
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
  if (!(se > 0)) return 1
  const z = (x1 / n1 - x2 / n2) / se
  return Math.min(1, 2 * normalUpperTail(Math.abs(z)))
}

/**
 * The minimum detectable effect: the smallest absolute difference of two proportions that a
 * two-sided test at `alpha` detects with probability `power`, for groups of n1 and n2 members and
 * the pooled rate `pooled` ((z₁₋α/₂ + z_power) · √(p(1 − p)(1/n1 + 1/n2))).
 */
export const minimumDetectableEffect = (
  n1: number,
  n2: number,
  pooled: number,
  options: { readonly alpha?: number; readonly power?: number } = {}
): number => {
  if (!(n1 >= 1) || !(n2 >= 1)) return NaN
  const alpha = options.alpha ?? 0.05
  const power = options.power ?? 0.8
  const z = normalQuantile(1 - alpha / 2, 0, 1) + normalQuantile(power, 0, 1)
  return z * Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
}

/**
 * The relative lift (pT − pC) / pC of a treatment rate xT/nT over a control rate xC/nC, with its
 * interval by the delta method: var = pT(1 − pT)/(nT·pC²) + pT²(1 − pC)/(nC·pC³). NaN fields when
 * a group is empty or the control rate is 0.
 */
export const relativeLiftInterval = (xT: number, nT: number, xC: number, nC: number, level = 0.95): Interval => {
  if (!(nT >= 1) || !(nC >= 1) || !(xC > 0)) return nan
  const pT = xT / nT
  const pC = xC / nC
  const estimate = (pT - pC) / pC
  const variance = (pT * (1 - pT)) / (nT * pC * pC) + (pT * pT * (1 - pC)) / (nC * pC * pC * pC)
  const half = zOf(level) * Math.sqrt(variance)
  return { estimate, lower: estimate - half, upper: estimate + half }
}

/**
 * What CUPED needs of one group: the count and the sums of the metric Y, the covariate X, their
 * squares and their products. Sums of integers stay exact as long as they stay below 2^53.
 */
export interface Moments {
  readonly n: number
  readonly sumY: number
  readonly sumY2: number
  readonly sumX: number
  readonly sumX2: number
  readonly sumXY: number
}

/** The moments of samples of (y, x). */
export const moments = (samples: ReadonlyArray<readonly [y: number, x: number]>): Moments => {
  let sumY = 0, sumY2 = 0, sumX = 0, sumX2 = 0, sumXY = 0
  for (const [y, x] of samples) {
    sumY += y
    sumY2 += y * y
    sumX += x
    sumX2 += x * x
    sumXY += x * y
  }
  return { n: samples.length, sumY, sumY2, sumX, sumX2, sumXY }
}

/** The moments of both groups together. */
export const combine = (a: Moments, b: Moments): Moments => ({
  n: a.n + b.n,
  sumY: a.sumY + b.sumY,
  sumY2: a.sumY2 + b.sumY2,
  sumX: a.sumX + b.sumX,
  sumX2: a.sumX2 + b.sumX2,
  sumXY: a.sumXY + b.sumXY
})

// Sample (n − 1) variances and covariance; never negative through rounding.
const varY = (m: Moments) => Math.max(0, (m.sumY2 - (m.sumY * m.sumY) / m.n) / (m.n - 1))
const varX = (m: Moments) => Math.max(0, (m.sumX2 - (m.sumX * m.sumX) / m.n) / (m.n - 1))
const covXY = (m: Moments) => (m.sumXY - (m.sumX * m.sumY) / m.n) / (m.n - 1)

/** A CUPED comparison of a treatment group with a control group. */
export interface Cuped {
  /** θ = cov(Y, X) / var(X) over both groups (0 when X does not vary). */
  readonly theta: number
  /** The control group's mean of Y adjusted with X. */
  readonly control: number
  /** The treatment group's mean of Y adjusted with X. */
  readonly treatment: number
  /** treatment − control of the adjusted means, with a Welch interval. */
  readonly difference: Interval
  /** 1 − variance of the adjusted difference / variance of the raw one; null when the raw one is 0. */
  readonly varianceReduction: number | null
}

/**
 * CUPED (Deng et al. 2013): each member's Y adjusted to Y − θ(X − mean X), θ pooled over both
 * groups; the difference of the adjusted means with a Welch (Welch–Satterthwaite degrees of
 * freedom) interval. Null when a group has fewer than 2 members.
 */
export const cuped = (treatment: Moments, control: Moments, level = 0.95): Cuped | null => {
  if (treatment.n < 2 || control.n < 2) return null
  const all = combine(treatment, control)
  const vx = varX(all)
  const theta = vx > 0 ? covXY(all) / vx : 0
  const meanX = all.sumX / all.n
  const adjusted = (m: Moments) => m.sumY / m.n - theta * (m.sumX / m.n - meanX)
  const adjustedVar = (m: Moments) => Math.max(0, varY(m) + theta * theta * varX(m) - 2 * theta * covXY(m))
  const aT = adjustedVar(treatment) / treatment.n
  const aC = adjustedVar(control) / control.n
  const rawSe2 = varY(treatment) / treatment.n + varY(control) / control.n
  const estimate = adjusted(treatment) - adjusted(control)
  const se2 = aT + aC
  let half = 0
  if (se2 > 0) {
    const df = (se2 * se2) / ((aT * aT) / (treatment.n - 1) + (aC * aC) / (control.n - 1))
    half = tQuantile(1 - (1 - level) / 2, df) * Math.sqrt(se2)
  }
  return {
    theta,
    control: adjusted(control),
    treatment: adjusted(treatment),
    difference: { estimate, lower: estimate - half, upper: estimate + half },
    varianceReduction: rawSe2 > 0 ? 1 - se2 / rawSe2 : null
  }
}
