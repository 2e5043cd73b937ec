/**
 * The Proof report over real HTTP on Postgres: enrolled members seeded into the store around an
 * experiment that started 40 days ago (explicit dates, so horizons mature), the report's shape
 * and numbers equal to the pure definition over the same activity, the sample-ratio check, and
 * the experiments history.
 */
import { expect, layer } from "@effect/vitest"
import { Calendar, Domain, Ids, Ports, ProofReport } from "@streaks/core"
import { Effect } from "effect"
import { admin, layer as testServer, request, tenant, type Tenant } from "./support/TestServer.js"

const DAY_MS = 86_400_000
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const api = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  request(`/v1/api${path}`, { headers: bearer(token), ...init })

const withKey = () =>
  Effect.gen(function*() {
    const t = yield* tenant()
    const key = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "proof" })
    expect((yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })).status).toBe(200)
    return { ...t, apiKey: key.body.key as string }
  })

/** An experiment of the tenant's program that started `daysAgo` days ago, stored directly. */
const pastExperiment = (t: Tenant, holdoutPercent: number, daysAgo: number) =>
  Effect.gen(function*() {
    const experiment = new Domain.Experiment({
      id: yield* Ids.make("ExperimentId"),
      projectId: Ids.unsafe("ProjectId", t.projectId),
      programId: Ids.unsafe("ProgramId", t.programId),
      holdoutPercent,
      startedAt: new Date(Date.now() - daysAgo * DAY_MS)
    })
    expect(yield* (yield* Ports.ExperimentStore).start(experiment)).toBe(true)
    return experiment
  })

/** Stores a live streak row in `zone` and these active days for the member. */
const seedMember = (t: Tenant, userHash: string, zone: string, days: ReadonlyArray<Calendar.LocalDate>) =>
  Effect.gen(function*() {
    const streaks = yield* Ports.StreakStore
    const key = new Domain.StreakKey({
      projectId: Ids.unsafe("ProjectId", t.projectId),
      programId: Ids.unsafe("ProgramId", t.programId),
      userHash: userHash as Ids.UserHash,
      ledger: "live"
    })
    const [row] = yield* streaks.lock([{ key, timezone: zone }])
    yield* streaks.save([new Domain.StreakRow({ ...row!, lastActiveDay: days[days.length - 1]!, run: 1, best: 1 })])
    yield* streaks.addDays(days.map((day) => ({ key, day })))
  })

layer(testServer(), { timeout: 120_000 })("Proof report over real HTTP on Postgres", (it) => {
  it.effect("current: groups, horizons with maturity, statistics and SRM equal the definition over the seeded activity", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const experiment = yield* pastExperiment(t, 30, 40)
      const zones = ["UTC", "Asia/Tokyo", "America/New_York"]
      const members: Array<ProofReport.MemberDays> = []
      for (let i = 0; i < 90; i++) {
        const zone = zones[i % 3]!
        const start = Calendar.localDate(experiment.startedAt, zone)
        const e = Calendar.addDays(start, i % 37)
        const days = [
          // 0..3 active days in the 28 days before the start: the CUPED covariate.
          ...Array.from({ length: i % 4 }, (_, k) => Calendar.addDays(start, -3 - 5 * k)),
          e,
          // As many days in the week after enrolment as before the start: the covariate predicts the metric.
          ...Array.from({ length: i % 4 }, (_, k) => Calendar.addDays(e, 2 + k)),
          // Two thirds come back: some on the next day, some a week later, some both.
          ...(i % 3 !== 0 ? [Calendar.addDays(e, 1 + (i % 2) * 8)] : []),
          ...(i % 5 === 0 ? [Calendar.addDays(e, 15), Calendar.addDays(e, 31)] : [])
        ].filter((d) => d < Calendar.localDate(new Date(), zone))
        yield* seedMember(t, `member_${i}`, zone, days)
        members.push({ userHash: `member_${i}`, timezone: zone, days })
      }
      // Active only before the start: in no group.
      yield* seedMember(t, "before_only", "UTC", [
        Calendar.addDays(Calendar.localDate(experiment.startedAt, "UTC"), -2)
      ])

      const current = yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)
      expect(current.status).toBe(200)
      const body = current.body
      expect(Object.keys(body).sort()).toEqual(
        ["control", "holdoutPercent", "id", "programId", "report", "startedAt", "treatment"].sort()
      )
      expect(body.id).toBe(experiment.id)

      // The same numbers as the definition over the same activity, at the same instant.
      const now = new Date()
      const windows = zones.map((zone) => ProofReport.windowOf(experiment, zone, 0, now))
      const expected = ProofReport.experimentReport(
        experiment,
        ProofReport.cohortsOf(ProofReport.cohortQuery(experiment, windows), members)
      )
      expect(body).toEqual(JSON.parse(JSON.stringify(expected)))

      const control = members.filter((m) => ProofReport.isControl(experiment.id, m.userHash, 30)).length
      expect(body.report.srm).toMatchObject({ control, treatment: 90 - control, mismatch: false })
      expect(body.control.members + body.treatment.members).toBe(90)
      expect(body.report.horizons.map((h: { horizon: number }) => h.horizon)).toEqual([1, 7, 14, 30])
      // Matured at h when e + h + 6 ≤ yesterday in the member's zone. The start was 40 × 24 hours
      // ago, so yesterday is the start + 39 there, or + 38 where a DST change fell in between.
      const enrolledOn = (i: number) =>
        Calendar.addDays(Calendar.localDate(experiment.startedAt, zones[i % 3]!), i % 37)
      const maturedAt = (h: number) =>
        members.filter((m, i) =>
          Calendar.addDays(enrolledOn(i), h + 6) <= Calendar.addDays(Calendar.localDate(now, m.timezone), -1)
        ).length
      const h30 = body.report.horizons[3]
      expect(h30.control.n + h30.treatment.n).toBe(maturedAt(30))
      expect(maturedAt(30)).toBeGreaterThan(0)
      const h1 = body.report.horizons[0]
      expect(h1.control.n + h1.treatment.n).toBe(maturedAt(1))
      for (const key of ["difference", "relative"]) {
        expect(h1[key].lower).toBeLessThanOrEqual(h1[key].estimate)
        expect(h1[key].estimate).toBeLessThanOrEqual(h1[key].upper)
      }
      expect(h1.pValue).toBeGreaterThan(0)
      expect(h1.mde).toBeGreaterThan(0)
      // At h = 1 the metric (active days in [e, e + 1)) is 1 for everyone: nothing to reduce. At 7 it varies.
      expect(h1.cuped.varianceReduction).toBeNull()
      const h7 = body.report.horizons[1]
      expect(h7.cuped.varianceReduction).toBeGreaterThan(0)
      expect(h7.cuped.difference.lower).toBeLessThan(h7.cuped.difference.upper)
    }))

  it.effect("srm flags a split far from the holdout; an experiment with no one enrolled has null statistics", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const experiment = yield* pastExperiment(t, 10, 20)
      const start = Calendar.localDate(experiment.startedAt, "UTC")
      // 30 members of each group: against a 10 : 90 split the control group is three times too big.
      let control = 0, treatment = 0
      for (let i = 0; control < 30 || treatment < 30; i++) {
        const inControl = ProofReport.isControl(experiment.id, `m${i}`, 10)
        if (inControl ? control >= 30 : treatment >= 30) continue
        yield* seedMember(t, `m${i}`, "UTC", [Calendar.addDays(start, 1)])
        if (inControl) control++
        else treatment++
      }
      const body = (yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)).body
      // χ² = (30 − 6)²/6 + (30 − 54)²/54
      expect(body.report.srm.chiSquare).toBeCloseTo(24 ** 2 / 6 + 24 ** 2 / 54, 9)
      expect(body.report.srm.pValue).toBeLessThan(0.001)
      expect(body.report.srm.mismatch).toBe(true)

      const empty = yield* withKey()
      yield* pastExperiment(empty, 10, 5)
      const none = (yield* api(empty.apiKey, `/programs/${empty.programId}/experiments/current`)).body
      expect(none.report.srm).toEqual({ control: 0, treatment: 0, chiSquare: null, pValue: null, mismatch: null })
      expect(none.report.horizons[0]).toEqual({
        horizon: 1,
        control: { n: 0, retained: 0, rate: null },
        treatment: { n: 0, retained: 0, rate: null },
        difference: null,
        relative: null,
        pValue: null,
        mde: null,
        cuped: null
      })
      expect(none.control).toEqual({ members: 0, retained: 0, retention7d: null })
    }))

  it.effect("history: GET …/experiments newest first, GET …/experiments/{id} for an ended one, 404 elsewhere", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const first = yield* pastExperiment(t, 20, 10)
      const stopped = yield* api(t.apiKey, `/programs/${t.programId}/experiments/current/stop`, { method: "POST" })
      expect(stopped.status).toBe(200)
      expect(stopped.body.endedAt).toBeDefined()
      expect(stopped.body.report.srm.control).toBe(0)
      const second = yield* api(t.apiKey, `/programs/${t.programId}/experiments`, { body: { holdoutPercent: 5 } })
      expect(second.status).toBe(201)

      const list = yield* api(t.apiKey, `/programs/${t.programId}/experiments`)
      expect(list.status).toBe(200)
      expect(list.body.experiments.map((e: { id: string }) => e.id)).toEqual([second.body.id, first.id])
      expect(list.body.experiments[0].report.horizons).toHaveLength(4)

      const old = yield* api(t.apiKey, `/programs/${t.programId}/experiments/${first.id}`)
      expect(old.status).toBe(200)
      expect(old.body).toMatchObject({ id: first.id, holdoutPercent: 20, endedAt: stopped.body.endedAt })
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)).body.id).toBe(second.body.id)

      // Another program's experiment, an unknown id, a program out of reach: 404.
      const other = yield* withKey()
      const theirs = yield* pastExperiment(other, 20, 3)
      const notHere = yield* api(t.apiKey, `/programs/${t.programId}/experiments/${theirs.id}`)
      expect([notHere.status, notHere.body]).toEqual([404, { error: "NOT_FOUND" }])
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/exp_unknown`)).status).toBe(404)
      expect((yield* api(t.apiKey, `/programs/${other.programId}/experiments`)).status).toBe(404)
    }))
})
