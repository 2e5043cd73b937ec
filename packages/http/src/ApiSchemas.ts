/**
 * Request and response bodies of the HTTP API that are not core wire inputs: admin provisioning
 * (docs/api.md#admin-routes), customer REST (docs/api.md#customer-rest-api-v1api), state
 * (docs/api.md#read-a-members-state-get-v1state), policies (docs/api.md#streak-policies). Shared by
 * server and client.
 */
import { Domain, Policy, ProofReport, Provisioning } from "@streaks/core"
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * Bounds of request fields (docs/api.md#conventions): every string has a maximum length, every
 * integer a range, every array a maximum size, declared here once and enforced by the decoders.
 */
export const bounds = {
  /** Ids (`ws_…`, `prj_…`, `prg_…`, siteKeys…). */
  id: 64,
  /** A member's id (`userHash`). */
  userHash: 256,
  eventKey: 128,
  /** Names of workspaces, projects, programs, keys and apps. */
  name: Provisioning.limits.name,
  /** Server tokens, webhook secrets and other credentials in headers. */
  secret: 256,
  /** A signed identity token (a JWT). */
  token: 4096,
  origin: 2048,
  origins: 100,
  url: 2048,
  timeZone: 64,
  milestones: 100,
  workspaces: 100,
  settingsWord: 64,
  date: 10,
  month: 7
} as const

/** A string of at most `max` characters. */
export const text = (max: number) => Schema.String.pipe(Schema.maxLength(max))

/** An integer from `min` to `max`. */
export const integer = (min: number, max: number) => Schema.Number.pipe(Schema.int(), Schema.between(min, max))

/**
 * The credentials the public doors read from headers, bounded as every input is: HttpApi decodes
 * them from the route's header schema, the reference server's fast path with `DoorHeaders`.
 */
export const doorHeaders = {
  "x-streak-server-token": Schema.optional(
    text(bounds.secret).annotations({
      description: "The project's server token (`sst_…`): required on calls without an `Origin` header."
    })
  ),
  "x-streak-webhook-secret": Schema.optional(
    text(bounds.secret).annotations({
      description: "The webhook ingest secret (`whi_…`) of the program that counts `event`."
    })
  ),
  "x-streak-identity": Schema.optional(
    text(bounds.token).annotations({
      description: "A signed identity token for this member: reveals coupon and link reward values."
    })
  )
}

/** Every credential header of the public doors at once (the fast path's check). */
export const DoorHeaders = Schema.Struct(doorHeaders)

/** A siteKey in a path (`/v1/webhook/{siteKey}/e`). */
export const SiteKeyParam = text(bounds.id)

const nonEmpty = (max: number) => Schema.String.pipe(Schema.minLength(1), Schema.maxLength(max))

export const IngestOk = Schema.Struct({
  ok: Schema.Literal(true),
  counted: Schema.optional(Schema.Boolean),
  reason: Schema.optional(Schema.String),
  duplicate: Schema.optional(Schema.Boolean)
})

export const Counted = Schema.Struct({
  counted: Schema.Boolean,
  reason: Schema.optional(Schema.String),
  duplicate: Schema.optional(Schema.Boolean)
})

export const StateParams = Schema.Struct({
  siteKey: text(bounds.id).annotations({ description: "The project's siteKey." }),
  userHash: text(bounds.userHash).annotations({
    description: "The member's stable id (a hash, never a raw e-mail address)."
  }),
  event: Schema.optional(
    text(bounds.eventKey).annotations({ description: "The event key of the program; required unless `kind` is given." })
  ),
  kind: Schema.optional(
    text(bounds.eventKey).annotations({ description: "Legacy alias of `event`; if both are given they must be equal." })
  ),
  identity: Schema.optional(
    text(bounds.token).annotations({ description: "A signed identity token, as in `X-Streak-Identity`." })
  )
})

export type StateParams = typeof StateParams.Type

export const WeekEntry = Schema.Struct({
  isoDate: Schema.String,
  label: Schema.String,
  dayNumber: Schema.Int,
  isToday: Schema.Boolean,
  isCheckedIn: Schema.Boolean,
  isFrozen: Schema.optional(Schema.Boolean.annotations({
    description: "Programs with a policy only: the day belongs to a missed period that a freeze carried the " +
      "streak across."
  })),
  isRestDay: Schema.optional(Schema.Boolean.annotations({
    description: "Programs with a policy only: one of the policy's rest days (daily cadence)."
  })),
  isPaused: Schema.optional(Schema.Boolean.annotations({
    description: "Members with a pause only: the day is inside one of the member's pauses."
  }))
})

/** The current period of a program with a policy (docs/streak-semantics.md#streak-policies). */
export const PeriodState = Schema.Struct({
  start: Schema.String.annotations({ description: "The period's first activity day (YYYY-MM-DD)." }),
  end: Schema.String.annotations({ description: "The period's last activity day (YYYY-MM-DD)." }),
  done: Schema.Int.annotations({ description: "Active days in the period so far." }),
  target: Schema.Int.annotations({ description: "Active days the period needs to be kept." })
}).annotations({ identifier: "PeriodState" })

const freezesNow = Schema.Int.annotations({ description: "Programs with a policy only: freezes available now." })
const periodNow = PeriodState.annotations({ description: "Programs with a policy only: the current period." })

export const MilestoneState = Schema.Struct({
  id: Schema.String,
  target: Schema.Int,
  msg: Schema.String,
  achieved: Schema.Boolean,
  rewardType: Schema.String,
  rewardValue: Schema.optional(Schema.String)
})

export const Settings = Schema.Struct({
  theme: Schema.Struct({ name: text(bounds.settingsWord) }),
  position: text(bounds.settingsWord),
  mainMessage: text(Provisioning.limits.milestoneMessage)
})

export const State = Schema.Struct({
  meta: Schema.Struct({ apiVersion: Schema.Literal("1"), isLive: Schema.Boolean }),
  streak: Schema.Struct({
    mode: Schema.String,
    current: Schema.Int,
    best: Schema.Int,
    todayDone: Schema.Boolean,
    pending: Schema.Boolean,
    freezes: Schema.optional(freezesNow),
    period: Schema.optional(periodNow)
  }),
  week: Schema.Array(WeekEntry),
  milestones: Schema.Array(MilestoneState),
  settings: Settings
})

export const AdminAlias = Schema.Struct({
  siteKey: text(bounds.id),
  anonymousId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)),
  userHash: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))
})

export const TokenAlias = Schema.Struct({ siteKey: text(bounds.id), token: text(bounds.token) })

export const Plan = Schema.Literal("starter", "growth", "scale", "pro")

export const WorkspaceBody = Schema.Struct({ name: nonEmpty(bounds.name), plan: Plan })
export const WorkspaceView = Schema.Struct({ id: Schema.String, name: Schema.String, plan: Plan })
export const RoleName = Schema.Literal("owner", "admin", "viewer")
export const PlanBody = Schema.Struct({ plan: Plan })

export const ProjectBody = Schema.Struct({
  workspaceId: text(bounds.id),
  name: nonEmpty(bounds.name),
  allowedOrigins: Schema.Array(text(bounds.origin)).pipe(Schema.maxItems(bounds.origins)),
  timezone: Schema.optional(text(bounds.timeZone)),
  browserCounting: Schema.optional(Schema.Literal("count", "display-only")),
  legacyNoOriginIngest: Schema.optional(Schema.Boolean)
})

export const ProjectCreated = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  siteKey: Schema.String,
  name: Schema.String,
  allowedOrigins: Schema.Array(Schema.String),
  timezone: Schema.String,
  browserCounting: Schema.String,
  legacyNoOriginIngest: Schema.Boolean,
  serverToken: Schema.String,
  signingSecret: Schema.String
})

export const MilestoneBody = Schema.Struct({
  target: integer(1, Provisioning.limits.milestoneTarget),
  msg: text(Provisioning.limits.milestoneMessage),
  rewardType: Schema.optional(Schema.Literal("message", "coupon", "link")),
  rewardValue: Schema.optional(text(Provisioning.limits.rewardValue))
})

const hour = (description: string) => ({ type: "integer", minimum: 0, maximum: 23, default: 0, description })
const upTo = (maximum: number, description: string) => ({
  type: "integer",
  minimum: 0,
  maximum,
  default: 0,
  description
})

/**
 * A streak policy as a request gives it (docs/streak-semantics.md#streak-policies). The body is
 * passed to core as it came, so that `Policy.decode` alone judges it (the rules between fields, and a
 * misspelt field refused rather than silently reset to its default); the JSON Schema here only
 * describes it.
 */
export const PolicyInput = Schema.Unknown.annotations({
  identifier: "PolicyInput",
  jsonSchema: {
    type: "object",
    description: "How the program counts. Every field may be left out and takes its default; a field this " +
      "schema does not name is refused.",
    properties: {
      cadence: {
        type: "string",
        enum: ["daily", "weekly", "monthly"],
        default: "daily",
        description: "The period a streak counts in: a day, an ISO week (Monday to Sunday) or a calendar month."
      },
      target: {
        type: "integer",
        minimum: 1,
        maximum: Policy.limits.target.monthly,
        default: 1,
        description: `Active days a period needs to be kept: ${Policy.limits.target.daily} for daily, 1 to ` +
          `${Policy.limits.target.weekly} for weekly, 1 to ${Policy.limits.target.monthly} for monthly.`
      },
      dayStartHour: hour("The local hour a member's day starts (4: an action at 02:30 counts for the day before)."),
      restDays: {
        type: "array",
        items: { type: "integer", minimum: 1, maximum: 7 },
        maxItems: Policy.limits.restDays,
        uniqueItems: true,
        default: [],
        description: "Daily cadence only: ISO weekdays (1 Monday to 7 Sunday) that never break a streak."
      },
      freezes: {
        type: "object",
        description: "The freeze bank: a freeze carries a streak across a missed period.",
        properties: {
          initial: upTo(Policy.limits.freezes, "Freezes a member starts with (at most `max`)."),
          max: upTo(Policy.limits.freezes, "Most freezes a member can hold."),
          earnEvery: upTo(
            Policy.limits.earnEvery,
            "One freeze earned each time the streak reaches a multiple of this (0: never)."
          )
        },
        additionalProperties: false
      },
      atRiskHour: hour("The local hour from which `streak.at_risk` may fire on a period's last chance day."),
      repairWindowDays: upTo(
        Policy.limits.repairWindowDays,
        "Days after a missed period's last day during which it may be repaired (0: no repairs)."
      ),
      repairsPer30Days: {
        type: "integer",
        minimum: 0,
        maximum: Policy.limits.repairsPer30Days,
        default: 1,
        description: "Repairs a member may have within any 30 days."
      }
    },
    additionalProperties: false
  }
})

export const ProgramBody = Schema.Struct({
  projectId: text(bounds.id),
  name: nonEmpty(bounds.name),
  eventKey: nonEmpty(bounds.eventKey),
  milestones: Schema.optionalWith(Schema.Array(MilestoneBody).pipe(Schema.maxItems(bounds.milestones)), {
    default: () => []
  }),
  settings: Schema.optional(Settings),
  policy: Schema.optional(PolicyInput)
})

/**
 * A program's policy as answers show it: every field, the defaults filled in
 * (docs/streak-semantics.md#streak-policies).
 */
export const PolicyView = Schema.Struct({
  cadence: Policy.Cadence,
  target: Schema.Int,
  dayStartHour: Schema.Int,
  restDays: Schema.Array(Schema.Int),
  freezes: Schema.Struct({ initial: Schema.Int, max: Schema.Int, earnEvery: Schema.Int }),
  atRiskHour: Schema.Int,
  repairWindowDays: Schema.Int,
  repairsPer30Days: Schema.Int
}).annotations({ identifier: "Policy" })

/** `mode` of a program and its streaks: `continuous` for a daily cadence, else the cadence. */
export const Mode = Policy.Mode

export const MilestoneView = Schema.Struct({
  id: Schema.String,
  target: Schema.Int,
  msg: Schema.String,
  rewardType: Schema.String,
  rewardValue: Schema.optional(Schema.String)
})

export const ProgramView = Schema.Struct({
  id: Schema.String,
  projectId: Schema.String,
  name: Schema.String,
  eventKey: Schema.String,
  status: Schema.Literal("test", "live"),
  mode: Mode,
  milestones: Schema.Array(MilestoneView),
  settings: Settings,
  policy: PolicyView
})

export const ProgramCreated = Schema.extend(ProgramView, Schema.Struct({ webhookSecret: Schema.String }))
export const WebhookSecret = Schema.Struct({ webhookSecret: Schema.String })
export const StatusBody = Schema.Struct({ status: Schema.Literal("test", "live") })
export const NameBody = Schema.Struct({ name: nonEmpty(bounds.name) })
export const ApiKeyCreated = Schema.Struct({ id: Schema.String, key: Schema.String })
export const GrantBody = Schema.Struct({
  workspaceIds: Schema.Array(text(bounds.id)).pipe(Schema.minItems(1), Schema.maxItems(bounds.workspaces)),
  appName: nonEmpty(bounds.name)
})
export const GrantCreated = Schema.Struct({ id: Schema.String, accessToken: Schema.String })
/** Bounds of an OAuth client's registration (as `OAuthServer.limits`). */
export const OAuthClientBody = Schema.Struct({
  name: nonEmpty(bounds.name),
  redirectUris: Schema.Array(text(2000)).pipe(Schema.minItems(1), Schema.maxItems(10))
})
export const OAuthClientCreated = Schema.Struct({ clientId: Schema.String, clientSecret: Schema.String })
export const UserBody = Schema.Struct({
  email: nonEmpty(254),
  name: nonEmpty(bounds.name),
  workspaces: Schema.Array(Schema.Struct({ workspaceId: text(bounds.id), role: RoleName })).pipe(
    Schema.minItems(1),
    Schema.maxItems(bounds.workspaces)
  ),
  /** At least 12 characters (checked by the service, which answers INVALID_BODY). */
  password: Schema.optional(text(256))
})
export const MembershipsBody = Schema.Struct({
  workspaces: Schema.Array(Schema.Struct({ workspaceId: text(bounds.id), role: RoleName })).pipe(
    Schema.minItems(1),
    Schema.maxItems(bounds.workspaces)
  )
})
export const UserView = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  name: Schema.String,
  workspaces: Schema.Array(Schema.Struct({ workspaceId: Schema.String, role: RoleName })),
  /** False until an invited user sets a password. */
  hasPassword: Schema.Boolean,
  createdAt: Schema.String
})
export const UserList = Schema.Struct({ users: Schema.Array(UserView) })
export const UserCreated = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  /** The one-time link where the user sets a password (72 hours), when no password was given. */
  inviteUrl: Schema.optional(Schema.String)
})
export const ApiKeyBody = Schema.Struct({ name: nonEmpty(bounds.name), workspaceId: text(bounds.id) })
export const ApiKeyList = Schema.Struct({
  apiKeys: Schema.Array(Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    workspaceId: Schema.String,
    createdAt: Schema.String
  }))
})
export const ConnectedApps = Schema.Struct({
  apps: Schema.Array(Schema.Struct({
    grantId: Schema.String,
    appName: Schema.String,
    /** The OAuth client the grant was issued to; null for an app the operator connected. */
    clientId: Schema.NullOr(Schema.String),
    /** Of the app's workspaces, those the signed-in user belongs to. */
    workspaceIds: Schema.Array(Schema.String),
    createdAt: Schema.String,
    /**
     * The app's last request with one of its access tokens (recorded to the minute) or its last
     * token refresh, whichever is later; null before either, and for an app the operator connected.
     */
    lastUsedAt: Schema.NullOr(Schema.String)
  }))
})
export const Actor = Schema.Struct({ kind: Schema.String, id: Schema.String })
export const HookList = Schema.Struct({
  hooks: Schema.Array(Schema.Struct({
    id: Schema.String,
    programId: Schema.String,
    url: Schema.String,
    eventTypes: Schema.Array(Schema.String),
    createdAt: Schema.String,
    createdBy: Actor
  }))
})
export const Deliveries = Schema.Struct({
  deliveries: Schema.Array(Schema.Struct({
    messageId: Schema.String,
    type: Schema.String,
    status: Schema.Literal("pending", "delivered", "failed"),
    createdAt: Schema.String,
    attempts: Schema.Array(Schema.Struct({
      attempt: Schema.Int,
      at: Schema.String,
      /** The receiver's HTTP status; null when no answer came (timeout, refused connection). */
      statusCode: Schema.NullOr(Schema.Int),
      durationMs: Schema.Number,
      error: Schema.NullOr(Schema.String)
    }))
  }))
})
export const Redelivery = Schema.Struct({ messageId: Schema.String, status: Schema.Literal("pending") })
export const MessageIdPath = Schema.Struct({ id: text(bounds.id), messageId: text(bounds.id) })
const instantParam = text(40).pipe(
  Schema.filter((s) => !Number.isNaN(Date.parse(s)) || "an ISO 8601 date-time"),
  Schema.annotations({ description: "An ISO 8601 date-time." })
)
export const AuditParams = Schema.Struct({
  from: Schema.optional(instantParam),
  to: Schema.optional(instantParam),
  cursor: Schema.optional(text(256)),
  limit: Schema.optional(text(3).pipe(Schema.compose(Schema.NumberFromString), Schema.int(), Schema.between(1, 200)))
})
export const AuditPage = Schema.Struct({
  entries: Schema.Array(Schema.Struct({
    id: Schema.String,
    at: Schema.String,
    workspaceId: Schema.NullOr(Schema.String),
    actor: Actor,
    clientAddress: Schema.String,
    action: Schema.String,
    target: Schema.String,
    details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  })),
  /** Pass as `cursor` for the next, older page; absent on the last one. */
  nextCursor: Schema.optional(Schema.String)
})
export const McpTokenBody = Schema.Struct({
  name: nonEmpty(bounds.name),
  workspaceIds: Schema.Array(text(bounds.id)).pipe(Schema.minItems(1), Schema.maxItems(bounds.workspaces))
})
export const McpTokenCreated = Schema.Struct({ id: Schema.String, token: Schema.String })
export const DueChecksRun = Schema.Struct({ atRisk: Schema.Int, broken: Schema.Int, freezesUsed: Schema.Int })
export const DeliveriesRun = Schema.Struct({
  attempted: Schema.Int,
  delivered: Schema.Int,
  failed: Schema.Int,
  retrying: Schema.Int
})

export const IdPath = Schema.Struct({ id: text(bounds.id) })

export const Me = Schema.Union(
  Schema.Struct({
    workspace: WorkspaceView,
    credential: Schema.Struct({ type: Schema.Literal("api_key"), id: Schema.String })
  }),
  Schema.Struct({
    workspaces: Schema.Array(WorkspaceView),
    credential: Schema.Struct({ type: Schema.Literal("oauth"), id: Schema.String })
  }),
  Schema.Struct({
    credential: Schema.Struct({ kind: Schema.Literal("session"), userId: Schema.String, email: Schema.String }),
    workspaces: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, plan: Plan, role: RoleName })),
    /** Send it as `X-CSRF-Token` on every state-changing request made with the session. */
    csrfToken: Schema.String
  })
)

export const CustomerProgram = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  eventKey: Schema.String,
  status: Schema.Literal("test", "live"),
  mode: Mode,
  policy: PolicyView,
  project: Schema.Struct({ id: Schema.String, siteKey: Schema.String, name: Schema.String })
})

export const MemberStreak = Schema.Struct({
  programId: Schema.String,
  userHash: Schema.String,
  current: Schema.Int,
  best: Schema.Int,
  todayDone: Schema.Boolean,
  pending: Schema.Boolean,
  lastActiveDate: Schema.NullOr(Schema.String),
  isLive: Schema.Boolean,
  mode: Schema.optional(Schema.String.annotations({
    description: "Programs with a policy only: `continuous` (daily cadence), `weekly` or `monthly`."
  })),
  freezes: Schema.optional(freezesNow),
  period: Schema.optional(periodNow)
})

/**
 * A policy refused by `PUT /v1/api/programs/{id}/policy`: 400 `INVALID_BODY` naming the field at
 * fault (its path in the policy, e.g. `freezes.initial`) and what is wrong with it, so that a form
 * can show the message beside that field.
 */
export class PolicyRefused extends Schema.Class<PolicyRefused>("PolicyRefused")({
  error: Schema.Literal("INVALID_BODY"),
  field: Schema.optional(Schema.String),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 400 })) {}

const policyFields = [
  "cadence",
  "target",
  "dayStartHour",
  "restDays",
  "freezes.initial",
  "freezes.max",
  "freezes.earnEvery",
  "freezes",
  "atRiskHour",
  "repairWindowDays",
  "repairsPer30Days"
]

/**
 * The refusal for a policy core judged invalid: core's message is `policy.<path>: <what>` for one
 * field, or `policy: <field> must …` for a rule between fields, which starts with the field it is about.
 */
export const policyRefused = (message: string | undefined): PolicyRefused => {
  const text = message ?? "the policy is not valid"
  const one = /^policy\.([A-Za-z0-9.]+): (.*)$/s.exec(text)
  if (one !== null) {
    const field = one[1]!.split(".").filter((part) => !/^\d+$/.test(part)).join(".")
    return new PolicyRefused({ error: "INVALID_BODY", field, message: one[2]! })
  }
  const rest = text.replace(/^policy: /, "")
  const first = rest.split(" ")[0]!
  return policyFields.includes(first)
    ? new PolicyRefused({ error: "INVALID_BODY", field: first, message: rest })
    : new PolicyRefused({ error: "INVALID_BODY", message: rest })
}

export const LedgerParams = Schema.Struct({
  from: Schema.optional(
    text(bounds.date).pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)).annotations({
      description: "First activity day shown (YYYY-MM-DD): periods that end before it are left out."
    })
  ),
  to: Schema.optional(
    text(bounds.date).pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)).annotations({
      description: "Last activity day shown (YYYY-MM-DD): periods that start after it are left out."
    })
  )
})

export const LedgerPeriod = Schema.Struct({
  start: Schema.String,
  end: Schema.String,
  status: Schema.Literal("kept", "frozen", "rest", "missed", "current", "repaired", "paused", "forgiven").annotations({
    description: "kept: the period had its target of active days; frozen: missed, a freeze carried the streak " +
      "across; rest: a rest day without activity; missed: not kept; current: today's period, not kept yet; " +
      "repaired: missed, then repaired (counts as kept); paused: inside one of the member's pauses; forgiven: " +
      "missed on a last chance day that an outage window overlapped (counts as rest)."
  }),
  activeDays: Schema.Int,
  target: Schema.Int
})

export const Ledger = Schema.Struct({
  programId: Schema.String,
  userHash: Schema.String,
  policy: PolicyView,
  current: Schema.Int,
  best: Schema.Int,
  freezes: Schema.Int,
  periods: Schema.Array(LedgerPeriod)
})

export const FreezesBody = Schema.Struct({
  count: integer(1, 10).annotations({ description: "Freezes to add, 1 to 10." })
})
export const FreezesGranted = Schema.Struct({
  freezes: Schema.Int.annotations({
    description: "The member's freezes after the grant (never over the policy's max)."
  })
})

const simulationDay = (description: string) =>
  Schema.optional(text(bounds.date).pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)).annotations({ description }))

/** `POST …/simulations` (docs/operations.md#trying-a-policy-before-shipping-it). */
export const SimulationBody = Schema.Struct({
  policy: PolicyInput.annotations({
    description: "The whole policy to try, as `PUT /admin/programs/{id}/policy` takes it (checked the same way)."
  }),
  from: simulationDay("First activity day replayed (YYYY-MM-DD, inclusive); default: the first stored."),
  to: simulationDay(
    "Last activity day replayed (YYYY-MM-DD, inclusive); streaks are then read as they stood that day. Default: " +
      "every stored day, streaks read now."
  )
})

const count = (description: string) => Schema.Int.annotations({ description })

export const Outcome = Schema.Struct({
  members: count("Members replayed: every member with a streak on the program's live ledger."),
  alive: count("Members whose streak is above 0 at the end of the replay."),
  broken: count("Chains that ended in the replay (a member may break several)."),
  freezesUsed: count("Freezes that carried a streak across a missed period, also in chains that ended later."),
  milestonesAchieved: count("(member, milestone) pairs whose target the member's longest run reached."),
  lengthHistogram: Schema.Array(Schema.Struct({ length: Schema.Int, members: Schema.Int })).annotations({
    description: "One entry per current streak length that some member has (0 included), ascending; the members " +
      "sum to `members`."
  })
}).annotations({ identifier: "SimulationOutcome" })

export const SimulationAnswer = Schema.Struct({
  actual: Outcome.annotations({ description: "The history under the program's current policy." }),
  proposed: Outcome.annotations({ description: "The same history under the proposed policy." })
})

const date = (description: string) =>
  text(bounds.date).pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/)).annotations({ description })

const instant = (description: string) => text(bounds.date + 32).annotations({ description, format: "date-time" })

const reason = (description: string) =>
  Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500)).annotations({
    description
  })

export const RepairBody = Schema.Struct({
  period: date("Any activity day (YYYY-MM-DD) of the missed period to repair."),
  reason: reason("Why (1 to 500 characters): a support ticket, a purchase.")
})

export const PauseBody = Schema.Struct({
  start: date("First paused activity day (YYYY-MM-DD)."),
  end: date("Last paused activity day (YYYY-MM-DD): not before the member's today, at most 90 days after start.")
})

export const PauseView = Schema.Struct({ id: Schema.String, start: Schema.String, end: Schema.String })
export const Pauses = Schema.Struct({ pauses: Schema.Array(PauseView) })

export const OutageBody = Schema.Struct({
  start: instant("When the outage began (ISO 8601 instant); not in the future."),
  end: instant("When it ended (ISO 8601 instant, after start, at most 7 days later); may be ahead while ongoing."),
  reason: reason("What was down (1 to 500 characters).")
})

export const OutageView = Schema.Struct({
  id: Schema.String,
  start: Schema.String,
  end: Schema.String,
  reason: Schema.String,
  restored: Schema.Int.annotations({
    description: "Streaks the window restored when it was declared (each live member so restored got one " +
      "`streak.repaired`)."
  })
})
export const Outages = Schema.Struct({ outages: Schema.Array(OutageView) })

export const MemberPath = Schema.Struct({ id: text(bounds.id), userHash: text(bounds.userHash) })

/** The outbound event types a subscription may name (docs/webhooks.md#event-types): core's list. */
export const EventTypes = Domain.OutboundEventType

export const HookBody = Schema.Struct({
  programId: text(bounds.id),
  url: text(bounds.url),
  eventTypes: Schema.Array(EventTypes).pipe(Schema.minItems(1), Schema.maxItems(EventTypes.literals.length))
})

export const HookCreated = Schema.Struct({
  id: Schema.String,
  programId: Schema.String,
  url: Schema.String,
  eventTypes: Schema.Array(EventTypes),
  secret: Schema.String,
  createdAt: Schema.String
})

export const SamplesParams = Schema.Struct({ type: EventTypes })

export const UsageParams = Schema.Struct({
  month: Schema.optional(text(bounds.month).pipe(Schema.pattern(/^\d{4}-\d{2}$/))),
  /** One of the credential's workspaces (default: its first). */
  workspaceId: Schema.optional(text(bounds.id))
})
export const Usage = Schema.Struct({
  month: Schema.String,
  plan: Plan,
  limit: Schema.Int,
  activeStreakers: Schema.Int,
  overLimit: Schema.Boolean
})

export const ReportParams = Schema.Struct({
  from: Schema.optional(text(bounds.date).pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))),
  to: Schema.optional(text(bounds.date).pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))),
  programId: Schema.optional(text(bounds.id))
})

export const ExperimentBody = Schema.Struct({ holdoutPercent: integer(1, 50) })

export const ExperimentView = Schema.Struct({
  id: Schema.String,
  programId: Schema.String,
  holdoutPercent: Schema.Int,
  startedAt: Schema.String,
  endedAt: Schema.optional(Schema.String)
})

/** An experiment id in a path (`exp_…`), bounded like every id. */
export const ExperimentId = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))

/** An experiment with its groups and Proof report (docs/api.md, "Proof report"). */
export const ExperimentReport = ProofReport.ExperimentReport

/** The answer to starting a history import (docs/api.md#import-history). */
export const ImportStarted = Schema.Struct({ importId: text(bounds.id) }).annotations({ identifier: "ImportStarted" })

const lineCount = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

/** A history import and its progress (docs/api.md#import-history). */
export const ImportView = Schema.Struct({
  id: text(bounds.id),
  status: Schema.Literal("running", "finished", "failed", "interrupted"),
  received: lineCount.annotations({ description: "Lines read (blank lines and a CSV header are not counted)." }),
  imported: lineCount.annotations({ description: "Lines stored as new actions." }),
  duplicates: lineCount.annotations({
    description: "Lines whose identity (idempotencyKey, else userHash and ts) was stored already."
  }),
  rejected: Schema.Array(Schema.Struct({
    line: lineCount.annotations({ description: "The line's number in the input, from 1." }),
    error: text(64).annotations({ description: "The code ingest answers for such an action." })
  })).annotations({ description: "The first 1000 rejected lines." }),
  startedAt: text(64),
  finishedAt: Schema.optional(text(64))
}).annotations({ identifier: "ImportView" })

export const Health = Schema.Struct({ status: Schema.Literal("ok") })

// --- Examples the OpenAPI document shows (checked against the schemas by the document's lint) ---

const siteKey = "site_01jzb8q3w7k2m9x4r6t1v5c8ny"
const userHash = "b1946ac92492d2347c6235b4d2611184"

/** Bodies of the ingest doors and answers of `GET /v1/state`, named as the document lists them. */
export const examples = {
  browserEvent: {
    widget: {
      summary: "A member's action, from the widget",
      value: { siteKey, userHash, event: "lesson_completed", tz: "Europe/Paris" }
    },
    impression: {
      summary: "The widget was seen (analytics only)",
      value: { siteKey, userHash, event: "lesson_completed", eventType: "widget_impression", sessionId: "s_7f3a" }
    }
  },
  serverEvent: {
    minimal: { summary: "The required fields", value: { siteKey, userHash, event: "lesson_completed" } },
    full: {
      summary: "With time, zone, idempotency key and metadata",
      value: {
        siteKey,
        userHash,
        event: "lesson_completed",
        ts: "2025-06-03T18:42:05Z",
        tz: "America/New_York",
        idempotencyKey: "lesson-8812-completion",
        source: "api",
        meta: { lessonId: "8812", course: "spanish-a1" }
      }
    }
  },
  webhookEvent: {
    minimal: { summary: "The required fields", value: { event: "lesson_completed", userHash } },
    full: {
      summary: "From an automation, with an idempotency key",
      value: {
        event: "lesson_completed",
        userHash,
        idempotencyKey: "zap-run-20250603-0042",
        ts: "2025-06-03T18:42:05Z",
        externalService: "zapier",
        integrationId: "lesson-sync"
      }
    }
  },
  countAction: {
    live: { summary: "Count an action", value: { userHash, idempotencyKey: "lesson-8812-completion" } },
    test: { summary: "Count test progress while the program is in test mode", value: { userHash, test: true } }
  },
  ingestAnswer: {
    counted: { summary: "Counted: the member's day is marked", value: { ok: true, counted: true } },
    duplicate: {
      summary: "An earlier action already marked the day: nothing moved",
      value: { ok: true, counted: true, duplicate: true }
    },
    notCounted: {
      summary: "Stored for analytics only (browser counting disabled for the project)",
      value: { ok: true, counted: false, reason: "BROWSER_COUNTING_DISABLED" }
    }
  },
  counted: {
    counted: { summary: "Counted", value: { counted: true } },
    notLive: {
      summary: "The program is in test mode and `test` was not set",
      value: { counted: false, reason: "PROGRAM_NOT_LIVE" }
    }
  },
  state: {
    streak: {
      summary: "A 3-day streak, today done, the 3-day milestone reached",
      value: {
        meta: { apiVersion: "1", isLive: true },
        streak: { mode: "continuous", current: 3, best: 5, todayDone: true, pending: false },
        week: [
          { isoDate: "2025-06-02", label: "Mon", dayNumber: 2, isToday: false, isCheckedIn: true },
          { isoDate: "2025-06-03", label: "Tue", dayNumber: 3, isToday: false, isCheckedIn: true },
          { isoDate: "2025-06-04", label: "Wed", dayNumber: 4, isToday: true, isCheckedIn: true },
          { isoDate: "2025-06-05", label: "Thu", dayNumber: 5, isToday: false, isCheckedIn: false },
          { isoDate: "2025-06-06", label: "Fri", dayNumber: 6, isToday: false, isCheckedIn: false },
          { isoDate: "2025-06-07", label: "Sat", dayNumber: 7, isToday: false, isCheckedIn: false },
          { isoDate: "2025-06-08", label: "Sun", dayNumber: 8, isToday: false, isCheckedIn: false }
        ],
        milestones: [
          { id: "ms_01jzb8r0c2d4f6h8j0k2m4p6r8", target: 3, msg: "Three days!", achieved: true, rewardType: "coupon" },
          {
            id: "ms_01jzb8r0c2d4f6h8j0k2m4p6r9",
            target: 7,
            msg: "A whole week",
            achieved: false,
            rewardType: "message"
          }
        ],
        settings: { theme: { name: "default" }, position: "bottom-right", mainMessage: "Keep your streak going!" }
      }
    }
  },
  stateParameters: { siteKey, userHash, event: "lesson_completed" },
  simulationRequest: {
    weekly: {
      summary: "Try a weekly policy with freezes on the live history",
      value: { policy: { cadence: "weekly", target: 3, freezes: { initial: 1, max: 2, earnEvery: 4 } } }
    }
  },
  simulationAnswer: {
    weekly: {
      summary: "Fewer breaks and more members alive under the proposed policy",
      value: {
        actual: {
          members: 5,
          alive: 2,
          broken: 6,
          freezesUsed: 0,
          milestonesAchieved: 3,
          lengthHistogram: [{ length: 0, members: 3 }, { length: 4, members: 1 }, { length: 12, members: 1 }]
        },
        proposed: {
          members: 5,
          alive: 4,
          broken: 1,
          freezesUsed: 3,
          milestonesAchieved: 2,
          lengthHistogram: [{ length: 0, members: 1 }, { length: 1, members: 2 }, { length: 3, members: 2 }]
        }
      }
    }
  },
  policy: {
    weekly: {
      summary: "Three active days a week, two freezes to start with, one more every 4 kept weeks",
      value: { cadence: "weekly", target: 3, freezes: { initial: 2, max: 3, earnEvery: 4 }, atRiskHour: 18 }
    },
    daily: {
      summary: "Daily, days starting at 04:00, weekends never break the streak",
      value: { cadence: "daily", dayStartHour: 4, restDays: [6, 7] }
    }
  },
  userBody: {
    invite: {
      summary: "An owner, invited to set a password",
      value: { email: "ada@example.com", name: "Ada", workspaces: [{ workspaceId: "ws_01hz3k", role: "owner" }] }
    },
    password: {
      summary: "A viewer with a password",
      value: {
        email: "grace@example.com",
        name: "Grace",
        workspaces: [{ workspaceId: "ws_01hz3k", role: "viewer" }],
        password: "correct horse battery staple"
      }
    }
  },
  membershipsBody: {
    demote: {
      summary: "Owner of one workspace, viewer of another",
      value: {
        workspaces: [{ workspaceId: "ws_01hz3k", role: "owner" }, { workspaceId: "ws_01hz3p", role: "viewer" }]
      }
    }
  },
  userCreated: {
    invited: {
      summary: "Invited",
      value: { id: "usr_01hz3m", email: "ada@example.com", inviteUrl: "https://streaks.example.com/invite?token=ivt_…" }
    }
  }
} as const
