/**
 * A small piece of "your" code, the kind these tests are about: replaying a member's actions
 * (each dated in the zone the member was in when it happened) into the streak state at an
 * instant. It is built only from the pure `Calendar` and `Streak` modules of `@streaks/core`,
 * which is what makes it testable without a database or a clock.
 */
import { Calendar, Streak } from "@streaks/core"

/** One action: when it happened and the IANA zone the member was in. */
export interface Action {
  readonly at: Date
  readonly tz: string
}

/** The local day each action counts for: its own zone decides, not the server's and not UTC. */
export const daysOf = (actions: ReadonlyArray<Action>): ReadonlyArray<Calendar.LocalDate> =>
  actions.map((a) => Calendar.localDate(a.at, a.tz))

/**
 * The state at `now` for a member who is in `zone` now: the same rules the engine applies
 * (one active day per local date, consecutive existing dates, today still owed = pending).
 */
export const stateAt = (actions: ReadonlyArray<Action>, now: Date | number, zone: string): Streak.State =>
  Streak.evaluate(Streak.fromDays(daysOf(actions), zone), now, zone)
