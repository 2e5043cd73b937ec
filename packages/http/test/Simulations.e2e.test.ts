/**
 * Policy simulation over real HTTP on Postgres (docs/operations.md#trying-a-policy-before-shipping-it):
 * `POST /v1/api/programs/{id}/simulations` answers the live history under the current and a
 * proposed policy, the current one agreeing with the member reads; a window; nothing written; an
 * invalid body refused as the policy route refuses it; another workspace's program not found.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  admin,
  daysAgo,
  request,
  serverEvent,
  type Tenant,
  tenant,
  layer as testServer,
  utcDate
} from "./support/TestServer.js"

const api = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  request(`/v1/api${path}`, { headers: { authorization: `Bearer ${token}` }, ...init })

const simulate = (t: Tenant & { apiKey: string }, body: unknown) =>
  api(t.apiKey, `/programs/${t.programId}/simulations`, { method: "POST", body })

/** A live tenant with an API key, whose members acted on the given days (days before today, UTC). */
const withHistory = (members: Record<string, ReadonlyArray<number>>) =>
  Effect.gen(function*() {
    const t = yield* tenant()
    const key = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "crm" })
    expect((yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })).status).toBe(200)
    for (const [userHash, days] of Object.entries(members)) {
      for (const n of days) {
        const r = yield* serverEvent(t, { userHash, ts: daysAgo(n) })
        expect([userHash, n, r.status, r.body.counted]).toEqual([userHash, n, 202, true])
      }
    }
    return { ...t, apiKey: key.body.key as string }
  })

// steady: the last 7 days; gappy: 6..1 days ago but 4; lapsed: 10 and 9 days ago.
const history = { steady: [6, 5, 4, 3, 2, 1, 0], gappy: [6, 5, 3, 2, 1], lapsed: [10, 9] }

layer(testServer(), { timeout: 120_000 })("policy simulation over real HTTP", (it) => {
  it.effect("answers the live history under the current policy and a proposed one; the current one is what member reads say", () =>
    Effect.gen(function*() {
      const t = yield* withHistory(history)
      const r = yield* simulate(t, { policy: { freezes: { initial: 1, max: 1 } } })
      expect([r.status, r.headers.get("content-type")]).toEqual([200, expect.stringContaining("application/json")])
      // Milestones of 1 and 3 days: steady and gappy reach both, lapsed the first.
      expect(r.body).toEqual({
        actual: {
          members: 3,
          alive: 2,
          broken: 2,
          freezesUsed: 0,
          milestonesAchieved: 5,
          lengthHistogram: [{ length: 0, members: 1 }, { length: 3, members: 1 }, { length: 7, members: 1 }]
        },
        // A freeze carries gappy across the missed day, and lapsed one day further before the break.
        proposed: {
          members: 3,
          alive: 2,
          broken: 1,
          freezesUsed: 2,
          milestonesAchieved: 5,
          lengthHistogram: [{ length: 0, members: 1 }, { length: 5, members: 1 }, { length: 7, members: 1 }]
        }
      })
      const currents = yield* Effect.forEach(
        Object.keys(history),
        (userHash) =>
          Effect.map(api(t.apiKey, `/programs/${t.programId}/members/${userHash}`), (m) => m.body.current as number)
      )
      expect(currents).toEqual([7, 3, 0])

      // Nothing was written: the program keeps its policy, the members their streaks.
      const programs = yield* api(t.apiKey, "/programs")
      expect((programs.body as Array<{ id: string; policy: { freezes: unknown } }>)[0]!.policy.freezes).toEqual({
        initial: 0,
        max: 0,
        earnEvery: 0
      })
      const gappy = yield* api(t.apiKey, `/programs/${t.programId}/members/gappy`)
      expect([gappy.body.current, gappy.body.best]).toEqual([3, 3])
      // The same policy as the current one answers the same outcome twice.
      const same = yield* simulate(t, { policy: {} })
      expect(same.body.proposed).toEqual(same.body.actual)
    }))

  it.effect("a window replays the days in it and reads the streaks as they stood on its last day", () =>
    Effect.gen(function*() {
      const t = yield* withHistory(history)
      const r = yield* simulate(t, { policy: { cadence: "weekly" }, to: utcDate(5) })
      expect(r.status).toBe(200)
      // On the day 5 days ago: steady and gappy had 2 days; lapsed had broken.
      expect(r.body.actual).toMatchObject({
        members: 3,
        alive: 2,
        broken: 1,
        lengthHistogram: [{ length: 0, members: 1 }, { length: 2, members: 2 }]
      })
      const from = yield* simulate(t, { policy: {}, from: utcDate(3), to: utcDate(0) })
      expect(from.body.actual.lengthHistogram).toEqual([{ length: 0, members: 1 }, { length: 3, members: 1 }, {
        length: 4,
        members: 1
      }])
    }))

  it.effect("an invalid policy or window is 400 INVALID_BODY, as on the policy route", () =>
    Effect.gen(function*() {
      const t = yield* withHistory({ steady: [1, 0] })
      const bodies: ReadonlyArray<unknown> = [
        { policy: { cadence: "yearly" } },
        { policy: { cadence: "weekly", target: 8 } },
        { policy: { cadance: "weekly" } },
        { policy: { freezes: { initial: 3, max: 2 } } },
        { policy: "weekly" },
        { policy: null },
        {},
        { policy: {}, from: "2026-02-30" },
        { policy: {}, from: "yesterday" },
        { policy: {}, from: utcDate(0), to: utcDate(1) },
        "not an object"
      ]
      for (const body of bodies) {
        const r = yield* simulate(t, body)
        expect([JSON.stringify(body), r.status, r.body]).toEqual([JSON.stringify(body), 400, { error: "INVALID_BODY" }])
      }
      // What PUT /admin/programs/{id}/policy refuses, the simulation refuses too.
      const put = yield* admin(`/admin/programs/${t.programId}/policy`, { cadence: "weekly", target: 8 }, "PUT")
      expect([put.status, put.body]).toEqual([400, { error: "INVALID_BODY" }])
    }))

  it.effect("another workspace's program and an unknown one are 404; without a credential 401", () =>
    Effect.gen(function*() {
      const t = yield* withHistory({ steady: [0] })
      const other = yield* withHistory({ someone: [0] })
      for (const programId of [other.programId, "prg_unknown"]) {
        const r = yield* api(t.apiKey, `/programs/${programId}/simulations`, { method: "POST", body: { policy: {} } })
        expect([r.status, r.body]).toEqual([404, { error: "NOT_FOUND" }])
      }
      const anonymous = yield* request(`/v1/api/programs/${t.programId}/simulations`, { body: { policy: {} } })
      expect(anonymous.status).toBe(401)
    }))
})
