/**
 * The tools of the MCP worker (docs/mcp.md): what an agent sees in `tools/list` (name, input and
 * output JSON schemas, hints) and what each call does. A call runs the core services that the
 * customer REST route answering the same question runs, in the same order; no rule lives here.
 * A call that changes something is recorded in the audit log as the REST route's change is.
 */
import type { OutboxSignal } from "@streaks/core"
import {
  Audit,
  Credentials,
  Errors,
  EventInput,
  Experiments,
  Forgiveness,
  Ingest,
  Metering,
  Policy,
  Ports,
  ProofReport,
  StateQuery,
  Streak,
  StreakPolicies
} from "@streaks/core"
import { Clock, Effect, JSONSchema, Option, type ParseResult, Schema } from "effect"

/**
 * What the tools need from their context: core services, two storage ports (reach, at-risk rows),
 * and for an audited write the audit log, the transactor and the outbox signal.
 */
export type Requirements =
  | Audit.Audit
  | OutboxSignal.OutboxSignal
  | Ports.Transactor
  | Credentials.Credentials
  | Experiments.Experiments
  | StateQuery.StateQuery
  | StreakPolicies.StreakPolicies
  | Forgiveness.Forgiveness
  | Ingest.Ingest
  | Metering.Metering
  | Ports.DirectoryStore
  | Ports.StreakStore

/** How a call can fail; each error carries the error code the agent reads (a StorageError none). */
export type ToolError =
  | Errors.InvalidBody
  | Errors.NotFound
  | Errors.NotRepairable
  | Errors.StorageError
  | Ingest.RecordError

/** A tool as `tools/list` describes it. */
export interface Descriptor {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly inputSchema: { readonly type: "object"; readonly [key: string]: unknown }
  readonly outputSchema: { readonly type: "object"; readonly [key: string]: unknown }
  readonly annotations: {
    readonly title: string
    readonly readOnlyHint: boolean
    readonly destructiveHint: boolean
    readonly idempotentHint: boolean
    readonly openWorldHint: boolean
  }
}

interface Definition<I, IE, O, OE> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly input: Schema.Schema<I, IE>
  readonly output: Schema.Schema<O, OE>
  /** Reads change nothing; the writes (`record_action`, `repair_streak`) are not idempotent. */
  readonly readOnly: boolean
  readonly run: (caller: Caller, input: I) => Effect.Effect<O, ToolError, Requirements>
}

/** Who calls a tool, and from where: the credential, and the client's address for the audit log. */
export interface Caller {
  readonly principal: Credentials.McpPrincipal
  /** The client address of the request (docs/operations.md#behind-a-proxy), `stdio` over stdio. */
  readonly clientAddress: string
}

/** The caller as the audit log names a writer: its credential (kind and id) and address. */
export const writerOf = (caller: Caller): Audit.By => ({
  actor: { kind: caller.principal.kind, id: caller.principal.id },
  clientAddress: caller.clientAddress
})

/** A tool with its types erased: its descriptor, and a call from raw arguments to structured content. */
export interface Tool {
  readonly descriptor: Descriptor
  readonly call: (
    caller: Caller,
    args: unknown
  ) => Effect.Effect<Record<string, unknown>, ToolError, Requirements>
}

/** The JSON Schema of a struct as MCP wants it: an object schema, without `$schema` or `$id`. */
const objectSchema = (schema: Schema.Schema.Any): Descriptor["inputSchema"] => {
  const json: Record<string, unknown> = Object.fromEntries(
    Object.entries(JSONSchema.make(schema)).filter(([key]) => key !== "$schema" && key !== "$id")
  )
  if (json["type"] !== "object") throw new Error(`not an object schema: ${JSON.stringify(json)}`)
  return { ...json, type: "object" }
}

const invalidArguments = (error: ParseResult.ParseError) => EventInput.invalidBody(error, "arguments")

/** The caller as a writer: without the workspaces it reaches read only. */
const writer = (caller: Caller): Caller => {
  const principal = caller.principal
  const readOnly = principal.readOnlyWorkspaceIds ?? []
  return readOnly.length === 0 ? caller : {
    ...caller,
    principal: {
      ...principal,
      workspaceIds: principal.workspaceIds.filter((id) => !readOnly.includes(id)),
      readOnlyWorkspaceIds: []
    }
  }
}

const tool = <I, IE, O, OE>(definition: Definition<I, IE, O, OE>): Tool => {
  // Unknown arguments are refused, as the published schema (`additionalProperties: false`) says.
  const decode = Schema.decodeUnknown(definition.input, { errors: "first", onExcessProperty: "error" })
  // Encoding through the declared output drops whatever the schema does not publish.
  const encode = Schema.encode(definition.output)
  return {
    descriptor: {
      name: definition.name,
      title: definition.title,
      description: definition.description,
      inputSchema: objectSchema(definition.input),
      outputSchema: objectSchema(definition.output),
      annotations: {
        title: definition.title,
        readOnlyHint: definition.readOnly,
        destructiveHint: false,
        idempotentHint: definition.readOnly,
        openWorldHint: false
      }
    },
    call: (caller, args) =>
      decode(args ?? {}).pipe(
        Effect.mapError(invalidArguments),
        // A write reaches only the workspaces the caller may write to (a consented grant whose user
        // is a viewer somewhere reads there only): elsewhere the program is not found.
        Effect.flatMap((input) => definition.run(definition.readOnly ? caller : writer(caller), input)),
        Effect.flatMap((output) => Effect.orDie(encode(output))),
        Effect.map((encoded) => encoded as Record<string, unknown>)
      )
  }
}

// --- Schemas --------------------------------------------------------------------------------------

/** An empty argument object (`Schema.Struct({})` alone would also admit arrays in its JSON Schema). */
const NoArguments = Schema.Struct({}).annotations({
  jsonSchema: { type: "object", properties: {}, additionalProperties: false }
})

const Integer = Schema.Number.pipe(Schema.int())

const ProgramId = Schema.String.annotations({ description: "A program id (prg_…), as list_programs gives it" })
const UserHash = Schema.String.annotations({
  description:
    "The member's stable opaque id (a hash of an e-mail or internal id; never a raw e-mail address), at most 256 characters"
})

const LocalDate = Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))

/** A program's policy, whole, the defaults filled in (docs/streak-semantics.md#streak-policies). */
const PolicyView = Schema.Struct({
  cadence: Policy.Cadence.annotations({ description: "The period a streak counts in: a day, an ISO week, a month" }),
  target: Integer.annotations({ description: "Active days a period needs to be kept" }),
  dayStartHour: Integer.annotations({ description: "Local hour at which a member's day starts (0..23)" }),
  restDays: Schema.Array(Integer).annotations({
    description: "Daily cadence: ISO weekdays (1 Monday..7 Sunday) that never break a streak"
  }),
  freezes: Schema.Struct({ initial: Integer, max: Integer, earnEvery: Integer }).annotations({
    description:
      "The freeze bank: freezes at the start, at most, and one earned every earnEvery kept periods (0: never)"
  }),
  repairWindowDays: Integer.annotations({
    description: "Days after a missed period's last day during which it may be repaired (0: no repairs)"
  }),
  repairsPer30Days: Integer.annotations({ description: "Repairs a member may have within any 30 days" }),
  atRiskHour: Integer.annotations({
    description: "Local hour from which a member is told on a period's last chance day that the streak is at risk"
  })
})

const ProgramItem = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  eventKey: Schema.String.annotations({ description: "The action the program counts" }),
  status: Schema.Literal("test", "live").annotations({
    description: "test: actions count on the test ledger; live: real progress"
  }),
  projectId: Schema.String,
  policy: PolicyView.annotations({ description: "How the program counts (a program without one: daily, the default)" })
})

/** The current period (docs/streak-semantics.md#streak-policies). */
const PeriodState = Schema.Struct({
  start: Schema.String.annotations({ description: "YYYY-MM-DD: the period's first activity day" }),
  end: Schema.String.annotations({ description: "YYYY-MM-DD: the period's last activity day" }),
  done: Integer.annotations({ description: "Active days in the period so far" }),
  target: Integer.annotations({ description: "Active days the period needs to be kept" })
})

/** The customer REST member answer (docs/api.md#get-programsprogramidmembersuserhash). */
const MemberStreak = Schema.Struct({
  programId: Schema.String,
  userHash: Schema.String,
  current: Integer.annotations({ description: "Length of the streak alive now, in periods (0 when broken)" }),
  best: Integer.annotations({ description: "Longest streak ever" }),
  todayDone: Schema.Boolean.annotations({ description: "Today's action is done (in the member's time zone)" }),
  pending: Schema.Boolean.annotations({ description: "Alive, but the current period is not kept yet" }),
  lastActiveDate: Schema.NullOr(Schema.String).annotations({ description: "YYYY-MM-DD of the last active day" }),
  isLive: Schema.Boolean,
  mode: Schema.optional(Schema.String).annotations({
    description: "Programs with a policy only: continuous (daily cadence), weekly or monthly"
  }),
  freezes: Schema.optional(Integer).annotations({ description: "Programs with a policy only: freezes available now" }),
  period: Schema.optional(PeriodState).annotations({ description: "Programs with a policy only: the current period" })
})

/** The ledger answer (docs/streak-semantics.md#streak-policies). */
const Ledger = Schema.Struct({
  programId: Schema.String,
  userHash: Schema.String,
  policy: PolicyView,
  current: Integer.annotations({ description: "Length of the streak alive now, in periods (0 when broken)" }),
  best: Integer.annotations({ description: "Longest streak ever" }),
  freezes: Integer.annotations({ description: "Freezes available now" }),
  periods: Schema.Array(Schema.Struct({
    start: Schema.String.annotations({ description: "YYYY-MM-DD: the period's first activity day" }),
    end: Schema.String.annotations({ description: "YYYY-MM-DD: the period's last activity day" }),
    status: Schema.Literal("kept", "frozen", "rest", "missed", "current", "repaired", "paused", "forgiven")
      .annotations({
        description: "kept: the period had its target of active days; frozen: missed, and a freeze carried the " +
          "streak across; rest: a rest day without activity; missed: not kept (a chain ends there); current: " +
          "the current period, not kept yet; repaired: missed, then repaired (counts as kept); paused: inside " +
          "one of the member's pauses (neither adds nor breaks); forgiven: missed on a last chance day that an " +
          "outage window overlapped (counts as rest)"
      }),
    activeDays: Integer,
    target: Integer
  })).annotations({ description: "Oldest first" })
})

/** The customer REST count-action answer (docs/api.md#post-programsprogramidevents). */
const Counted = Schema.Struct({
  counted: Schema.Boolean.annotations({ description: "Whether the action counts toward the streak" }),
  reason: Schema.optional(Schema.String).annotations({
    description:
      "PROGRAM_NOT_LIVE: the program is in test and the action was not sent with test: true; nothing was counted"
  }),
  duplicate: Schema.optional(Schema.Boolean).annotations({
    description: "An earlier action already marked that day: nothing moved"
  })
})

/** The usage answer (docs/api.md#get-usage). */
const Usage = Schema.Struct({
  month: Schema.String,
  plan: Schema.Literal("starter", "growth", "scale", "pro"),
  limit: Integer,
  activeStreakers: Integer,
  overLimit: Schema.Boolean
})

/** Most members `list_at_risk` answers when `limit` is not given, and at most. */
export const atRiskDefault = 50
export const atRiskMax = 500

// --- The tools ------------------------------------------------------------------------------------

const listPrograms = tool({
  name: "list_programs",
  title: "List programs",
  description: "Every program this credential reaches: its id (for the other tools), name, the event key it counts, " +
    "whether it is live or in test, its project, and its policy (how it counts: cadence, active days per period, " +
    "day start, rest days, freezes).",
  input: NoArguments,
  output: Schema.Struct({ programs: Schema.Array(ProgramItem) }),
  readOnly: true,
  run: (caller) =>
    Effect.flatMap(
      Credentials.Credentials,
      (credentials) =>
        Effect.map(credentials.reachablePrograms(caller.principal), (reached) => ({
          programs: reached.map(({ program }) => ({
            id: program.id,
            name: program.name,
            eventKey: program.eventKey,
            status: program.status,
            projectId: program.projectId,
            policy: Policy.toJson(Policy.of(program))
          }))
        }))
    )
})

const getMemberStreak = tool({
  name: "get_member_streak",
  title: "Get a member's streak",
  description: "A member's streak in a program as the customer REST API answers it: current and best length, " +
    "whether today's action is done or the current period still owed, the last active day; for a program with a " +
    "policy also its mode, the freezes available and the current period. An unknown member has zeros.",
  input: Schema.Struct({ programId: ProgramId, userHash: UserHash }),
  output: MemberStreak,
  readOnly: true,
  run: (caller, { programId, userHash }) =>
    Effect.gen(function*() {
      const program = yield* (yield* Credentials.Credentials).reachableProgram(caller.principal, programId)
      return yield* (yield* StateQuery.StateQuery).memberStreak(program.id, userHash)
    })
})

const explainStreak = tool({
  name: "explain_streak",
  title: "Explain a member's streak",
  description: "Why a member's streak is what it is: each period (day, ISO week or month, by the program's policy) " +
    "with its active days and whether it was kept, frozen (a freeze carried the streak across), a rest day, " +
    "missed, repaired, paused, forgiven (an outage window), or is the current one; with the policy, current and " +
    "best length and the freezes available. " +
    "Default: the last 8 periods.",
  input: Schema.Struct({
    programId: ProgramId,
    userHash: UserHash,
    from: Schema.optional(LocalDate).annotations({
      description: "YYYY-MM-DD: the first activity day shown (periods that end before it are left out)"
    }),
    to: Schema.optional(LocalDate).annotations({
      description: "YYYY-MM-DD: the last activity day shown (periods that start after it are left out)"
    })
  }),
  output: Ledger,
  readOnly: true,
  run: (caller, { programId, userHash, ...range }) =>
    Effect.gen(function*() {
      const program = yield* (yield* Credentials.Credentials).reachableProgram(caller.principal, programId)
      return yield* (yield* StreakPolicies.StreakPolicies).ledger(program.id, userHash, range)
    })
})

/** What a policy makes of a program's history (docs/operations.md#trying-a-policy-before-shipping-it). */
const Outcome = Schema.Struct({
  members: Integer.annotations({ description: "Members replayed (every member with a live streak in the program)" }),
  alive: Integer.annotations({ description: "Members whose streak is above 0 at the end of the replay" }),
  broken: Integer.annotations({ description: "Chains that ended in the replay" }),
  freezesUsed: Integer.annotations({
    description: "Freezes that carried a streak across a missed period, also in chains that ended later"
  }),
  milestonesAchieved: Integer.annotations({
    description: "(member, milestone) pairs whose target the member's longest run reached"
  }),
  lengthHistogram: Schema.Array(Schema.Struct({ length: Integer, members: Integer })).annotations({
    description: "Members per current streak length (0 included), ascending"
  })
})

const simulatePolicy = tool({
  name: "simulate_policy",
  title: "Try a streak policy on a program's history",
  description: "Replays every member's stored live activity days under the program's current policy (actual) and " +
    "under a proposed one (proposed), with the same rules as counting, and answers for each: members alive, " +
    "chains broken, freezes used, milestones reached and the histogram of current lengths. Changes nothing: " +
    "use it to compare policies before changing one.",
  input: Schema.Struct({
    programId: ProgramId,
    policy: Schema.Unknown.annotations({
      jsonSchema: {
        type: "object",
        description: "The whole policy to try; every field may be left out (its default): cadence " +
          "(daily|weekly|monthly), target (active days per period), dayStartHour, restDays (daily: ISO weekdays), " +
          "freezes {initial, max, earnEvery}, atRiskHour"
      }
    }),
    from: Schema.optional(LocalDate).annotations({ description: "YYYY-MM-DD: the first activity day replayed" }),
    to: Schema.optional(LocalDate).annotations({
      description: "YYYY-MM-DD: the last activity day replayed (streaks read as they stood that day)"
    })
  }),
  output: Schema.Struct({
    actual: Outcome.annotations({ description: "Under the program's current policy" }),
    proposed: Outcome.annotations({ description: "Under the proposed policy" })
  }),
  readOnly: true,
  run: (caller, { programId, ...request }) =>
    Effect.gen(function*() {
      const program = yield* (yield* Credentials.Credentials).reachableProgram(caller.principal, programId)
      return yield* (yield* StreakPolicies.StreakPolicies).simulate(program.id, request)
    })
})

const recordAction = tool({
  name: "record_action",
  title: "Record a member action",
  description: "Counts one action of a member in a program, exactly as the customer REST count action does: " +
    "one per member and local day, test progress apart from real progress. In a test program send test: true, " +
    "else nothing counts (reason PROGRAM_NOT_LIVE). Retries with the same idempotencyKey count once.",
  input: Schema.Struct({
    programId: ProgramId,
    userHash: UserHash,
    ts: Schema.optional(Schema.String).annotations({
      description: "When the action happened: ISO 8601 with Z or an offset (default now; at most 5 minutes ahead)"
    }),
    idempotencyKey: Schema.optional(Schema.String).annotations({
      description: "At most 255 characters; a repeat within 24 hours replays the first answer and counts nothing"
    }),
    test: Schema.optional(Schema.Boolean).annotations({ description: "Count on the test ledger (a test action)" })
  }),
  output: Counted,
  readOnly: false,
  // The order of the REST route: the body's shape, the program's reach, the action's own checks.
  run: (caller, { programId, ...body }) =>
    Effect.gen(function*() {
      const payload = yield* Schema.decodeUnknown(EventInput.CountAction)(body).pipe(Effect.mapError(invalidArguments))
      const { program, project } = yield* Credentials.reach(caller.principal, programId)
      const action = yield* EventInput.fromCountAction(payload)
      const answer = yield* (yield* Ingest.Ingest).record({
        project,
        action,
        auth: { door: "api", programId: program.id }
      })
      const { counted, duplicate, reason } = answer.body
      return {
        counted: counted ?? false,
        ...(reason === "PROGRAM_NOT_LIVE" ? { reason } : {}),
        ...(duplicate !== undefined ? { duplicate } : {})
      }
    })
})

const repairStreak = tool({
  name: "repair_streak",
  title: "Repair a missed period",
  description: "For support agents: makes a member's missed period whole, as the customer REST repair does. The " +
    "period (any day of it) must be missed in the ledger, within the policy's repairWindowDays after its last " +
    "day, and within repairsPer30Days repairs in the last 30 days; otherwise NOT_REPAIRABLE and nothing changes. " +
    "The repaired period counts as kept; streak.repaired is sent. Answers the member's streak after.",
  input: Schema.Struct({
    programId: ProgramId,
    userHash: UserHash,
    period: LocalDate.annotations({ description: "YYYY-MM-DD: any activity day of the missed period" }),
    reason: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500)).annotations({
      description: "Why (1 to 500 characters): the support ticket, the agreement"
    })
  }),
  output: MemberStreak,
  readOnly: false,
  // Audited as the REST repair is: the repair and its entry commit together, a refused one leaves none.
  run: (caller, { period, programId, reason, userHash }) =>
    Effect.gen(function*() {
      const { program, project } = yield* Credentials.reach(caller.principal, programId)
      const forgiveness = yield* Forgiveness.Forgiveness
      const repaired = yield* Audit.audited(writerOf(caller), () => ({
        action: "streak.repair",
        target: program.id,
        workspaceId: project.workspaceId,
        details: { userHash }
      }), forgiveness.repair(program.id, userHash, { period, reason }))
      // Read once the repair is committed, as the REST route reads it.
      return yield* (yield* StateQuery.StateQuery).memberStreak(program.id, repaired.userHash)
    })
})

const listAtRisk = tool({
  name: "list_at_risk",
  title: "List members at risk",
  description: "Members of the program's live ledger whose streak is alive but whose current period (the day, " +
    "ISO week or month, by the program's policy, in the member's time zone) is not yet kept: unless they act " +
    "enough before periodEnd ends, the period is missed (it costs a freeze if they hold one, else the streak). " +
    "Longest current streak first.",
  input: Schema.Struct({
    programId: ProgramId,
    limit: Schema.optional(Integer.pipe(Schema.between(1, atRiskMax))).annotations({
      description: `Most members to answer (default ${atRiskDefault}, at most ${atRiskMax})`
    })
  }),
  output: Schema.Struct({
    members: Schema.Array(Schema.Struct({
      userHash: Schema.String,
      current: Integer,
      periodEnd: Schema.String.annotations({ description: "YYYY-MM-DD: the last day of the period still owed" })
    }))
  }),
  readOnly: true,
  run: (caller, { limit, programId }) =>
    Effect.gen(function*() {
      const program = yield* (yield* Credentials.Credentials).reachableProgram(caller.principal, programId)
      const policy = Policy.of(program)
      const rows = yield* (yield* Ports.StreakStore).rows({ programId: program.id, ledger: "live" })
      const now = yield* Clock.currentTimeMillis
      // Each row is judged in its own zone, as the due checks that send `streak.at_risk` judge it.
      // `pending`: alive, the current period not kept, and not a rest day (nothing is owed on one).
      const members = rows.flatMap((row) => {
        const state = Streak.evaluate(
          Streak.fromRow(row, policy, Streak.windowsOf(program)),
          now,
          row.timezone,
          policy
        )
        return state.pending
          ? [{ userHash: row.userHash as string, current: state.current, periodEnd: state.period.end as string }]
          : []
      })
      members.sort((a, b) => b.current - a.current || (a.userHash < b.userHash ? -1 : a.userHash > b.userHash ? 1 : 0))
      return { members: members.slice(0, limit ?? atRiskDefault) }
    })
})

const getUsage = tool({
  name: "get_usage",
  title: "Get usage",
  description: "Active streakers of the credential's workspace in a UTC month against its plan's limit " +
    "(over the limit nothing is refused; reports pause until the plan is raised).",
  input: Schema.Struct({
    month: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}$/))).annotations({
      description: "YYYY-MM (default: the current UTC month)"
    })
  }),
  output: Usage,
  readOnly: true,
  run: (caller, { month }) =>
    Effect.gen(function*() {
      const workspaceId = Option.fromNullable(caller.principal.workspaceIds[0])
      if (Option.isNone(workspaceId)) return yield* new Errors.NotFound({ message: "no workspace" })
      return yield* (yield* Metering.Metering).usage(workspaceId.value, month)
    })
})

const getExperimentReport = tool({
  name: "get_experiment_report",
  title: "Get a Proof experiment's report",
  description: "A Proof experiment of the program (a holdout group that receives no outbound events) with its " +
    "report, as the customer REST API answers it: the groups' enrolled members; per horizon (1, 7, 14, 30 days " +
    "after a member's first active day since the start) matured and retained members per group, the difference " +
    "of retention rates (treatment − control) with a 95 % interval, the relative lift, the p-value, the minimum " +
    "detectable effect and CUPED; and a sample-ratio check (mismatch: the groups are not the size they should " +
    "be). Default: the running experiment.",
  input: Schema.Struct({
    programId: ProgramId,
    experimentId: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))).annotations({
      description: "An experiment id (exp_…) of the program, running or ended (default: the running one)"
    })
  }),
  output: ProofReport.ExperimentReport,
  readOnly: true,
  run: (caller, { experimentId, programId }) =>
    Effect.gen(function*() {
      const program = yield* (yield* Credentials.Credentials).reachableProgram(caller.principal, programId)
      const experiments = yield* Experiments.Experiments
      return yield* (experimentId === undefined
        ? experiments.current(program.id)
        : experiments.get(program.id, experimentId))
    })
})

/** Every tool, in the order `tools/list` gives them. */
export const all: ReadonlyArray<Tool> = [
  listPrograms,
  getMemberStreak,
  explainStreak,
  simulatePolicy,
  recordAction,
  repairStreak,
  listAtRisk,
  getUsage,
  getExperimentReport
]

const byName = new Map(all.map((t) => [t.descriptor.name, t]))

/** The tool named `name`, if there is one. */
export const find = (name: string): Option.Option<Tool> => Option.fromNullable(byName.get(name))
