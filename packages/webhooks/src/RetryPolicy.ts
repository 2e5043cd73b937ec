/**
 * When a failed delivery is tried again (docs/webhooks.md#answers-retries-and-removal):
 * immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure; after that the
 * message is failed. A receiver's `Retry-After` (on any failed answer, typically 429/503) can only
 * push the next attempt later.
 */
import { Duration, Option } from "effect"

/** Delay before attempt n+1 after n failed attempts (index n−1). */
export const schedule: ReadonlyArray<Duration.Duration> = [
  Duration.seconds(5),
  Duration.minutes(5),
  Duration.minutes(30),
  Duration.hours(2),
  Duration.hours(5),
  Duration.hours(10),
  Duration.hours(10)
]

/** Total attempts a message gets: the first plus one per scheduled retry. */
export const maxAttempts = schedule.length + 1

/** A `Retry-After` above this is ignored in favour of the schedule (a receiver cannot park us). */
export const maxRetryAfter = Duration.hours(24)

/** The wait before the next attempt after `attemptsMade` failed ones, or None when it was the last. */
export const nextAttemptDelay = (
  attemptsMade: number,
  retryAfter?: Duration.Duration
): Option.Option<Duration.Duration> => {
  const base = schedule[attemptsMade - 1]
  if (base === undefined) return Option.none()
  if (retryAfter === undefined || Duration.greaterThan(retryAfter, maxRetryAfter)) return Option.some(base)
  return Option.some(Duration.max(base, retryAfter))
}

export type Outcome = "delivered" | "gone" | "retry"

/** 2xx ends a message; 410 removes the subscription; everything else (3xx included) is retried. */
export const classify = (status: number): Outcome =>
  status >= 200 && status < 300 ? "delivered" : status === 410 ? "gone" : "retry"
