/**
 * Request and response bodies of the HTTP API that are not core wire inputs: admin provisioning
 * (CONTRACT §13), customer REST (§9, §11, §12), state (spec §2.6). Shared by server and client.
 */
import { Schema } from "effect"

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
  siteKey: Schema.String,
  userHash: Schema.String,
  event: Schema.optional(Schema.String),
  kind: Schema.optional(Schema.String),
  identity: Schema.optional(Schema.String)
})

export const WeekEntry = Schema.Struct({
  isoDate: Schema.String,
  label: Schema.String,
  dayNumber: Schema.Int,
  isToday: Schema.Boolean,
  isCheckedIn: Schema.Boolean
})

export const MilestoneState = Schema.Struct({
  id: Schema.String,
  target: Schema.Int,
  msg: Schema.String,
  achieved: Schema.Boolean,
  rewardType: Schema.String,
  rewardValue: Schema.optional(Schema.String)
})

export const Settings = Schema.Struct({
  theme: Schema.Struct({ name: Schema.String }),
  position: Schema.String,
  mainMessage: Schema.String
})

export const State = Schema.Struct({
  meta: Schema.Struct({ apiVersion: Schema.Literal("1"), isLive: Schema.Boolean }),
  streak: Schema.Struct({
    mode: Schema.String,
    current: Schema.Int,
    best: Schema.Int,
    todayDone: Schema.Boolean,
    pending: Schema.Boolean
  }),
  week: Schema.Array(WeekEntry),
  milestones: Schema.Array(MilestoneState),
  settings: Settings
})

export const AdminAlias = Schema.Struct({
  siteKey: Schema.String,
  anonymousId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)),
  userHash: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))
})

export const TokenAlias = Schema.Struct({ siteKey: Schema.String, token: Schema.String })

export const Plan = Schema.Literal("starter", "growth", "scale", "pro")

export const WorkspaceBody = Schema.Struct({ name: Schema.String.pipe(Schema.minLength(1)), plan: Plan })
export const WorkspaceView = Schema.Struct({ id: Schema.String, name: Schema.String, plan: Plan })
export const PlanBody = Schema.Struct({ plan: Plan })

export const ProjectBody = Schema.Struct({
  workspaceId: Schema.String,
  name: Schema.String.pipe(Schema.minLength(1)),
  allowedOrigins: Schema.Array(Schema.String),
  timezone: Schema.optional(Schema.String),
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
  target: Schema.Int,
  msg: Schema.String,
  rewardType: Schema.optional(Schema.Literal("message", "coupon", "link")),
  rewardValue: Schema.optional(Schema.String)
})

export const ProgramBody = Schema.Struct({
  projectId: Schema.String,
  name: Schema.String.pipe(Schema.minLength(1)),
  eventKey: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128)),
  milestones: Schema.optionalWith(Schema.Array(MilestoneBody), { default: () => [] }),
  settings: Schema.optional(Settings)
})

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
  mode: Schema.String,
  milestones: Schema.Array(MilestoneView),
  settings: Settings
})

export const ProgramCreated = Schema.extend(ProgramView, Schema.Struct({ webhookSecret: Schema.String }))
export const WebhookSecret = Schema.Struct({ webhookSecret: Schema.String })
export const StatusBody = Schema.Struct({ status: Schema.Literal("test", "live") })
export const NameBody = Schema.Struct({ name: Schema.String.pipe(Schema.minLength(1)) })
export const ApiKeyCreated = Schema.Struct({ id: Schema.String, key: Schema.String })
export const GrantBody = Schema.Struct({
  workspaceIds: Schema.Array(Schema.String).pipe(Schema.minItems(1)),
  appName: Schema.String.pipe(Schema.minLength(1))
})
export const GrantCreated = Schema.Struct({ id: Schema.String, accessToken: Schema.String })
export const McpTokenBody = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1)),
  workspaceIds: Schema.Array(Schema.String).pipe(Schema.minItems(1))
})
export const McpTokenCreated = Schema.Struct({ id: Schema.String, token: Schema.String })
export const DueChecksRun = Schema.Struct({ atRisk: Schema.Int, broken: Schema.Int })
export const DeliveriesRun = Schema.Struct({
  attempted: Schema.Int,
  delivered: Schema.Int,
  failed: Schema.Int,
  retrying: Schema.Int
})

export const IdPath = Schema.Struct({ id: Schema.String })

export const Me = Schema.Union(
  Schema.Struct({
    workspace: WorkspaceView,
    credential: Schema.Struct({ type: Schema.Literal("api_key"), id: Schema.String })
  }),
  Schema.Struct({
    workspaces: Schema.Array(WorkspaceView),
    credential: Schema.Struct({ type: Schema.Literal("oauth"), id: Schema.String })
  })
)

export const CustomerProgram = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  eventKey: Schema.String,
  status: Schema.Literal("test", "live"),
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
  isLive: Schema.Boolean
})

export const MemberPath = Schema.Struct({ id: Schema.String, userHash: Schema.String })

export const EventTypes = Schema.Literal("milestone.achieved", "reward.unlocked", "streak.at_risk", "streak.broken")

export const HookBody = Schema.Struct({
  programId: Schema.String,
  url: Schema.String,
  eventTypes: Schema.Array(EventTypes).pipe(Schema.minItems(1))
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

export const UsageParams = Schema.Struct({ month: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}$/))) })
export const Usage = Schema.Struct({
  month: Schema.String,
  plan: Plan,
  limit: Schema.Int,
  activeStreakers: Schema.Int,
  overLimit: Schema.Boolean
})

export const ReportParams = Schema.Struct({
  from: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))),
  to: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))),
  programId: Schema.optional(Schema.String)
})

export const ExperimentBody = Schema.Struct({ holdoutPercent: Schema.Int.pipe(Schema.between(1, 50)) })

export const ExperimentView = Schema.Struct({
  id: Schema.String,
  programId: Schema.String,
  holdoutPercent: Schema.Int,
  startedAt: Schema.String,
  endedAt: Schema.optional(Schema.String)
})

export const Health = Schema.Struct({ status: Schema.Literal("ok") })
