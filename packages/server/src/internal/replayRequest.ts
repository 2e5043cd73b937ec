/**
 * What the server sends a simulation worker for one page (`SimulationWorkers`,
 * `internal/simulationWorker.ts`): the histories and each replay's settings in a form that crosses
 * a thread by structured clone (the policy as its JSON, instants as milliseconds).
 */
import * as Policy from "@streaks/core/Policy"
import type * as Simulation from "@streaks/core/Simulation"

export interface ReplaySettings {
  readonly policy: ReturnType<typeof Policy.toJson>
  readonly milestoneTargets: ReadonlyArray<number>
  readonly now: number
  readonly window?: Simulation.Window | undefined
  readonly outages?: Simulation.Settings["outages"]
}

export interface ReplayRequest {
  readonly histories: ReadonlyArray<Simulation.History>
  readonly settings: ReadonlyArray<ReplaySettings>
}

/** A page's histories with only the fields a replay reads (a store's row carries more). */
const historyOf = (h: Simulation.History): Simulation.History => ({
  timezone: h.timezone,
  grants: h.grants,
  days: h.days,
  ...(h.repairs !== undefined ? { repairs: h.repairs.map((r) => ({ period: r.period })) } : {}),
  ...(h.pauses !== undefined ? { pauses: h.pauses.map((p) => ({ start: p.start, end: p.end })) } : {})
})

export const encode = (
  histories: ReadonlyArray<Simulation.History>,
  settings: ReadonlyArray<Simulation.Settings>
): ReplayRequest => ({
  histories: histories.map(historyOf),
  settings: settings.map((s) => ({
    policy: Policy.toJson(s.policy),
    milestoneTargets: s.milestoneTargets,
    now: typeof s.now === "number" ? s.now : s.now.getTime(),
    window: s.window,
    outages: s.outages
  }))
})

/** The settings a worker replays with; a policy that the server sent always decodes. */
export const settingsOf = (s: ReplaySettings): Simulation.Settings => {
  const policy = Policy.decode(s.policy)
  if (policy._tag === "Left") throw new Error(`a simulation worker was sent a policy it cannot read: ${policy.left}`)
  return {
    policy: policy.right,
    milestoneTargets: s.milestoneTargets,
    now: s.now,
    window: s.window,
    outages: s.outages
  }
}
