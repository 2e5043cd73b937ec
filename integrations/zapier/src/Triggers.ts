/**
 * The REST-hook triggers, one per outbound event type: turning a Zap on subscribes Zapier's
 * target URL to the program (`POST /v1/api/hooks`), turning it off removes the subscription
 * (`DELETE /v1/api/hooks/{id}`), each delivery becomes one record whose `id` is the message id
 * (the same on every retry, so Zapier runs the Zap once per event), and recent deliveries (or a
 * made-up one) come from `GET /v1/api/programs/{id}/webhook-samples`.
 */
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Programs from "./Programs.js"
import * as Server from "./Server.js"

export type EventType =
  | "milestone.achieved"
  | "reward.unlocked"
  | "streak.at_risk"
  | "streak.broken"
  | "streak.freeze_used"
  | "streak.freeze_earned"
  | "streak.repaired"

/** A delivery's JSON body (docs/webhooks.md, "The delivery"). */
export interface Delivery {
  readonly id: string
  readonly type: EventType
  readonly timestamp: string
  readonly data: Readonly<Record<string, unknown>>
}

/** What `POST /v1/api/hooks` answers; Zapier keeps it as `bundle.subscribeData`. */
export interface Subscription {
  readonly id: string
  readonly programId: string
  readonly url: string
  readonly eventTypes: ReadonlyArray<EventType>
  readonly secret: string
  readonly createdAt: string
}

const isDelivery = (u: unknown): u is Delivery =>
  typeof u === "object" && u !== null && typeof (u as Delivery).id === "string" &&
  typeof (u as Delivery).type === "string" && typeof (u as Delivery).data === "object" &&
  (u as Delivery).data !== null

/** The trigger's record: the message id, type and time, then every field of `data` at the top. */
export const record = (delivery: Delivery) => ({
  id: delivery.id,
  type: delivery.type,
  timestamp: delivery.timestamp,
  ...delivery.data
})

const base = {
  programId: "prg_06eeqbmgm1r2ngy4xcbggwa5nr",
  projectId: "prj_06eeqbmgm1n0h4acwe8c6as1pg",
  siteKey: "site_06eeqbmgm1wt63qv9a8a1bvgb4",
  userHash: "member-42",
  isTest: false
}

const milestone = { id: "ms_06eeqbmgm1gya8sr7vd5rmcbxr", target: 7, msg: "One week streak!", rewardType: "coupon" }

/** Sample records of the shape a delivery carries (the examples of docs/webhooks.md). */
export const samples: Record<EventType, ReturnType<typeof record>> = {
  "milestone.achieved": record({
    id: "msg_06eeqbmgm0m6k5aw068fdwnvw8",
    type: "milestone.achieved",
    timestamp: "2026-03-14T09:30:12.000Z",
    data: { ...base, streak: { current: 7, best: 7 }, milestone }
  }),
  "reward.unlocked": record({
    id: "msg_06eeqbmgm14cvbeqyvq245cgw4",
    type: "reward.unlocked",
    timestamp: "2026-03-14T09:30:12.000Z",
    data: { ...base, streak: { current: 7, best: 7 }, milestone, reward: { type: "coupon", value: "WEEK-ONE-10" } }
  }),
  "streak.at_risk": record({
    id: "msg_06eeqbmgm0czb9b64svrsby120",
    type: "streak.at_risk",
    timestamp: "2026-03-15T23:00:04.000Z",
    data: { ...base, streak: { current: 7, best: 7 }, localDate: "2026-03-16", timezone: "Europe/Paris" }
  }),
  "streak.broken": record({
    id: "msg_06eeqbmgm1rb3qnrfddc0gg238",
    type: "streak.broken",
    timestamp: "2026-03-16T23:00:03.000Z",
    data: {
      ...base,
      streak: { current: 0, best: 7 },
      endedRun: 7,
      lastActiveDate: "2026-03-15",
      timezone: "Europe/Paris"
    }
  }),
  "streak.freeze_used": record({
    id: "msg_06eeqbmgm1x8v5ph2c4x2fy1ab",
    type: "streak.freeze_used",
    timestamp: "2026-03-15T23:00:02.000Z",
    data: {
      ...base,
      streak: { current: 1, best: 1 },
      period: { start: "2026-03-09", end: "2026-03-15" },
      freezesLeft: 0,
      timezone: "Europe/Paris"
    }
  }),
  "streak.freeze_earned": record({
    id: "msg_06eeqbmgm1d7gk0q3vt1y2bq5c",
    type: "streak.freeze_earned",
    timestamp: "2026-03-03T08:12:40.000Z",
    data: { ...base, streak: { current: 3, best: 3 }, freezesAvailable: 1, timezone: "Europe/Paris" }
  }),
  "streak.repaired": record({
    id: "msg_06eeqbmgm1k2p4qz7c0vb9ds3e",
    type: "streak.repaired",
    timestamp: "2026-03-17T10:04:51.000Z",
    data: { ...base, streak: { current: 8, best: 8 }, period: { start: "2026-03-16", end: "2026-03-16" }, current: 8 }
  })
}

const common = [
  // The primary key Zapier deduplicates records on: the message id, the same on every retry.
  { key: "id", label: "Message ID", primary: true },
  { key: "type", label: "Event Type" },
  { key: "timestamp", label: "Fired At", type: "datetime" as const },
  { key: "programId", label: "Program ID" },
  { key: "projectId", label: "Project ID" },
  { key: "siteKey", label: "Site Key" },
  { key: "userHash", label: "Member ID (userHash)" },
  { key: "streak__current", label: "Current Streak", type: "integer" as const },
  { key: "streak__best", label: "Best Streak", type: "integer" as const }
]

const milestoneFields = [
  { key: "milestone__id", label: "Milestone ID" },
  { key: "milestone__target", label: "Milestone Target (days)", type: "integer" as const },
  { key: "milestone__msg", label: "Milestone Message" },
  { key: "milestone__rewardType", label: "Reward Type" }
]

interface OutputField {
  readonly key: string
  readonly label: string
  readonly type?: "integer" | "datetime"
  readonly primary?: boolean
}

const outputFields: Record<EventType, ReadonlyArray<OutputField>> = {
  "milestone.achieved": [...common, ...milestoneFields],
  "reward.unlocked": [
    ...common,
    ...milestoneFields,
    { key: "reward__type", label: "Reward Type" },
    { key: "reward__value", label: "Reward Value (coupon code, link or message)" }
  ],
  "streak.at_risk": [
    ...common,
    { key: "localDate", label: "Day Still Owed (YYYY-MM-DD)" },
    { key: "timezone", label: "Member Time Zone" },
    { key: "freezesAvailable", label: "Freezes Available", type: "integer" },
    { key: "periodEnd", label: "Period Ends (YYYY-MM-DD)" }
  ],
  "streak.broken": [
    ...common,
    { key: "endedRun", label: "Length of the Ended Streak", type: "integer" },
    { key: "lastActiveDate", label: "Last Active Day (YYYY-MM-DD)" },
    { key: "timezone", label: "Member Time Zone" }
  ],
  "streak.freeze_used": [
    ...common,
    { key: "period__start", label: "Frozen Period Start (YYYY-MM-DD)" },
    { key: "period__end", label: "Frozen Period End (YYYY-MM-DD)" },
    { key: "freezesLeft", label: "Freezes Left", type: "integer" },
    { key: "timezone", label: "Member Time Zone" }
  ],
  "streak.freeze_earned": [
    ...common,
    { key: "freezesAvailable", label: "Freezes Available", type: "integer" },
    { key: "timezone", label: "Member Time Zone" }
  ],
  "streak.repaired": [
    ...common,
    { key: "period__start", label: "Repaired Period Start (YYYY-MM-DD)" },
    { key: "period__end", label: "Repaired Period End (YYYY-MM-DD)" },
    { key: "current", label: "Streak After the Repair", type: "integer" }
  ]
}

interface Spec {
  readonly key: string
  readonly type: EventType
  readonly noun: string
  readonly label: string
  readonly description: string
}

/** Subscribes Zapier's `targetUrl` to this trigger's event type for the chosen program. */
const subscribe = (type: EventType) => async (z: ZObject, bundle: Bundle): Promise<Subscription> => {
  const response = await z.request<Subscription>({
    url: Server.apiUrl(bundle, "/hooks"),
    method: "POST",
    body: { programId: bundle.inputData.programId, url: bundle.targetUrl, eventTypes: [type] }
  })
  return response.data
}

/**
 * Removes the Zap's subscription. A 404 means it is gone already (its URL answered 410, or the
 * credential that created it was revoked): that is the state asked for, so it is no error.
 */
export const unsubscribe = async (z: ZObject, bundle: Bundle): Promise<{ readonly id: string }> => {
  const id = (bundle.subscribeData as Partial<Subscription> | undefined)?.id
  if (id === undefined) throw new z.errors.Error("This Zap holds no subscription to remove", "NO_SUBSCRIPTION")
  const response = await z.request({
    url: Server.apiUrl(bundle, `/hooks/${encodeURIComponent(id)}`),
    method: "DELETE",
    skipThrowForStatus: true
  })
  if (response.status === 404) return { id }
  Server.raise(response, z, bundle)
  return { id }
}

/** One delivery → one record; a body that is no delivery of this type gives none. */
const perform = (type: EventType) => (_z: ZObject, bundle: Bundle) => {
  const body: unknown = bundle.cleanedRequest
  return isDelivery(body) && body.type === type ? [record(body)] : []
}

/** Recent deliveries of this type for the program, newest first, or one made-up sample. */
const list = (type: EventType) => async (z: ZObject, bundle: Bundle) => {
  const programId = encodeURIComponent(String(bundle.inputData.programId ?? ""))
  const response = await z.request<ReadonlyArray<unknown>>({
    url: Server.apiUrl(bundle, `/programs/${programId}/webhook-samples`),
    method: "GET",
    params: { type }
  })
  return response.data.filter(isDelivery).map(record)
}

const hook = (spec: Spec) => ({
  key: spec.key,
  noun: spec.noun,
  display: { label: spec.label, description: spec.description },
  operation: {
    type: "hook" as const,
    inputFields: [Programs.field("The program whose members this Zap watches.")],
    performSubscribe: subscribe(spec.type),
    performUnsubscribe: unsubscribe,
    perform: perform(spec.type),
    performList: list(spec.type),
    sample: samples[spec.type],
    outputFields: outputFields[spec.type].map((f) => ({ ...f }))
  }
})

export const specs: ReadonlyArray<Spec> = [
  {
    key: "milestoneAchieved",
    type: "milestone.achieved",
    noun: "Milestone",
    label: "Milestone Achieved",
    description: "Triggers when a member's streak reaches one of the program's milestones for the first time."
  },
  {
    key: "rewardUnlocked",
    type: "reward.unlocked",
    noun: "Reward",
    label: "Reward Unlocked",
    description: "Triggers when a member reaches a milestone that carries a reward (a coupon, a link or a message)."
  },
  {
    key: "streakAtRisk",
    type: "streak.at_risk",
    noun: "Streak",
    label: "Streak At Risk",
    description: "Triggers when a new day has started in the member's time zone and their streak is not kept alive yet."
  },
  {
    key: "streakBroken",
    type: "streak.broken",
    noun: "Streak",
    label: "Streak Broken",
    description: "Triggers when a member missed a full day (or period) and their streak ended."
  },
  {
    key: "freezeUsed",
    type: "streak.freeze_used",
    noun: "Freeze",
    label: "Freeze Used",
    description: "Triggers when a missed day (or period) was covered by one of the member's streak freezes."
  },
  {
    key: "freezeEarned",
    type: "streak.freeze_earned",
    noun: "Freeze",
    label: "Freeze Earned",
    description: "Triggers when a member earns a streak freeze by keeping their streak going."
  },
  {
    key: "streakRepaired",
    type: "streak.repaired",
    noun: "Streak",
    label: "Streak Repaired",
    description:
      "Triggers when a missed day (or period) of a member was made whole: repaired by your team, or forgiven by an " +
      "outage window declared over it."
  }
]

/** Every REST-hook trigger, by key. */
export const triggers = Object.fromEntries(specs.map((s) => [s.key, hook(s)]))
