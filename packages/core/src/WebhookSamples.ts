/**
 * Payload samples for automation platforms (docs/api.md#get-programsprogramidwebhook-samplestypet):
 * the most recent deliveries of one event type for a program, or one synthetic payload of the exact
 * delivery shape when none exists yet.
 */
import { Clock, Effect } from "effect"
import * as Calendar from "./Calendar.js"
import { Milestone, type OutboundEventType, type Program, type Project } from "./Domain.js"
import type { StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import * as OutboundEvents from "./OutboundEvents.js"
import { Outbox } from "./Ports.js"

/** How many recent deliveries a sample answer holds at most. */
export const maxSamples = 3

const sampleMilestone = (program: Program): Milestone =>
  program.milestones[0] ??
    new Milestone({
      id: Ids.unsafe("MilestoneId", "ms_sample"),
      target: 7,
      msg: "One week streak!",
      rewardType: "message"
    })

const sampleEvent = (
  type: OutboundEventType,
  milestone: Milestone,
  today: Calendar.LocalDate,
  zone: string
): OutboundEvents.Event => {
  switch (type) {
    case "milestone.achieved":
    case "reward.unlocked":
      return { type, milestone }
    case "streak.at_risk":
      return { type, localDate: today, timezone: zone, policy: { freezesAvailable: 1, periodEnd: today } }
    case "streak.broken":
      return { type, endedRun: 7, lastActiveDate: Calendar.addDays(today, -2), timezone: zone }
    case "streak.freeze_used": {
      const day = Calendar.addDays(today, -1)
      return { type, period: { start: day, end: day }, freezesLeft: 1, timezone: zone }
    }
    case "streak.freeze_earned":
      return { type, freezesAvailable: 2, timezone: zone }
    case "streak.repaired": {
      const day = Calendar.addDays(today, -1)
      return { type, period: { start: day, end: day }, current: 8 }
    }
  }
}

/** A made-up event of `type` about a made-up member, dated now. */
export const synthetic = (
  project: Project,
  program: Program,
  type: OutboundEventType
): Effect.Effect<ReturnType<typeof OutboundEvents.body>> =>
  Effect.map(Clock.currentTimeMillis, (millis) => {
    const now = new Date(millis)
    const zone = project.timezone
    const today = Calendar.localDate(now, zone)
    const milestone = sampleMilestone(program)
    const event = sampleEvent(type, milestone, today, zone)
    const subject: OutboundEvents.Subject = {
      project,
      program,
      userHash: "sample_member" as OutboundEvents.Subject["userHash"],
      ledger: "live",
      streak: type === "streak.broken"
        ? { current: 0, best: 7 }
        : type === "streak.repaired"
        ? { current: 8, best: 8 }
        : { current: 7, best: 7 }
    }
    return OutboundEvents.body(Ids.unsafe("MessageId", "msg_sample"), now, subject, event)
  })

/** Up to `maxSamples` delivered payloads of `type`, newest first, else one synthetic sample. */
export const samples = (
  project: Project,
  program: Program,
  type: OutboundEventType
): Effect.Effect<ReadonlyArray<unknown>, StorageError, Outbox> =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    const delivered = yield* outbox.recentDelivered(program.id, type, maxSamples)
    if (delivered.length > 0) return delivered.map((m) => JSON.parse(m.payload) as unknown)
    return [yield* synthetic(project, program, type)]
  })
