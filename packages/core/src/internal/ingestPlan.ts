/**
 * What an action means before any storage: its ledger and whether it counts (CONTRACT §3, §5
 * `browserCounting`), and the body its door answers with.
 */
import type { Door, Ledger, Program, Project } from "../Domain.js"
import type { Action } from "../EventInput.js"

/** The body a door answers with (public doors add `ok: true`; the REST door does not). */
export interface AnswerBody {
  readonly ok?: true
  readonly counted?: boolean
  readonly reason?: string
  readonly duplicate?: boolean
}

export interface Plan {
  readonly ledger: Ledger
  /** Whether the action marks a day of the streak at all. */
  readonly counting: boolean
  /** A real action in a test program: it goes to the live ledger and, if it moves progress, makes the program live. */
  readonly promote: boolean
  readonly reason?: string
}

/** The ledger and counting rule of an action (CONTRACT §3, §5 `browserCounting`). */
export const plan = (project: Project, program: Program, action: Action, door: Door): Plan => {
  const ledger: Ledger = action.test || program.status === "test" ? "test" : "live"
  if (action.eventType !== "streak_interaction") return { ledger, counting: false, promote: false }
  if (door === "api" && !action.test && program.status === "test") {
    return { ledger: "test", counting: false, promote: false, reason: "PROGRAM_NOT_LIVE" }
  }
  if (door === "browser" && project.browserCounting === "display-only") {
    return { ledger, counting: false, promote: false, reason: "BROWSER_COUNTING_DISABLED" }
  }
  if (action.test || program.status === "live") return { ledger, counting: true, promote: false }
  // A test program: the webhook door counts test progress and never makes it live; a real action
  // from the member's site or sender is the first one on the live ledger.
  return door === "browser" || door === "server"
    ? { ledger: "live", counting: true, promote: true }
    : { ledger: "test", counting: true, promote: false }
}

// Built without a leading spread, which costs a promotion per answer on V8 11 (see `Streak.ts`).
export const answer = (door: Door, counted: boolean, reason: string | undefined, duplicate: boolean): AnswerBody => {
  const body: { ok?: true; counted: boolean; reason?: string; duplicate?: true } = door === "api"
    ? { counted }
    : { ok: true, counted }
  if (reason !== undefined) body.reason = reason
  if (duplicate) body.duplicate = true
  return body
}
