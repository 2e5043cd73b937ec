/**
 * Test-data builders: valid entities with fresh random ids, so tests that share one database never
 * see each other's data. Each builder takes overrides for the fields a test cares about. Also the
 * reads of one record that tests inspect with (the ports read in batches).
 */
import { Array as Arr, Effect, type Option } from "effect"
import { randomBytes } from "node:crypto"
import * as Calendar from "@streaks/core/Calendar"
import {
  Achievement,
  ActionRecord,
  ApiKey,
  defaultSettings,
  DeliveryAttempt,
  Experiment,
  Milestone,
  OAuthGrant,
  OutboundEventType,
  OutboxMessage,
  Program,
  Project,
  StreakKey,
  StreakRow,
  Subscription,
  Workspace
} from "@streaks/core/Domain"
import type { StorageError } from "@streaks/core/Errors"
import type { ImportJob } from "@streaks/core/ImportStore"
import * as Ids from "@streaks/core/Ids"
import { AchievementStore, DirectoryStore, type Member, MemberStore, StreakStore } from "@streaks/core/Ports"

type Fields<C extends abstract new(...args: any) => any> = ConstructorParameters<C>[0]
type Overrides<C extends abstract new(...args: any) => any> = Partial<Fields<C>>

/** A fixed instant used as the default time of every builder: tests pass instants explicitly. */
export const epoch = new Date("2024-03-01T00:00:00.000Z")

/** A fresh id of the given kind (e.g. `freshId("ProgramId")`), unique across runs and processes. */
export const freshId = <K extends Parameters<typeof Ids.make>[0]>(kind: K) => Effect.runSync(Ids.make(kind))

/** Random lowercase hex, for token hashes and unique names. */
export const randomHex = (bytes = 16): string => randomBytes(bytes).toString("hex")

/** A fresh member id (never an e-mail address). */
export const makeUserHash = (): Ids.UserHash => `user_${randomHex(8)}` as Ids.UserHash

/** A calendar date from "YYYY-MM-DD"; throws on an invalid date. */
export const day = (date: string): Calendar.LocalDate => Calendar.unsafeLocalDate(date)

/** `base` plus `ms` milliseconds, as a new Date. */
export const at = (base: Date, ms: number): Date => new Date(base.getTime() + ms)

export const makeWorkspace = (overrides: Overrides<typeof Workspace> = {}): Workspace =>
  new Workspace({ id: freshId("WorkspaceId"), name: "Test workspace", plan: "starter", createdAt: epoch, ...overrides })

export const makeProject = (workspaceId: Ids.WorkspaceId, overrides: Overrides<typeof Project> = {}): Project =>
  new Project({
    id: freshId("ProjectId"),
    workspaceId,
    siteKey: freshId("SiteKey"),
    name: "Test project",
    allowedOrigins: ["https://app.example.com"],
    timezone: "UTC",
    browserCounting: "count",
    legacyNoOriginIngest: false,
    serverTokenHash: randomHex(32),
    signingSecretSealed: `sealed:${randomHex(16)}`,
    createdAt: epoch,
    ...overrides
  })

export const makeMilestone = (overrides: Overrides<typeof Milestone> = {}): Milestone =>
  new Milestone({
    id: freshId("MilestoneId"),
    target: 3,
    msg: "Three days in a row!",
    rewardType: "message",
    ...overrides
  })

/** A `test` program counting `lesson_completed`, with milestones at 3 (message) and 7 (coupon). */
export const makeProgram = (projectId: Ids.ProjectId, overrides: Overrides<typeof Program> = {}): Program =>
  new Program({
    id: freshId("ProgramId"),
    projectId,
    name: "Test program",
    eventKey: "lesson_completed",
    status: "test",
    mode: "continuous",
    webhookSecretHash: randomHex(32),
    milestones: [
      makeMilestone({ target: 3 }),
      makeMilestone({ target: 7, msg: "A week!", rewardType: "coupon", rewardValue: "WEEK10" })
    ],
    settings: defaultSettings,
    createdAt: epoch,
    ...overrides
  })

/** The streak of a (fresh, unless given) member in `program`, on the live ledger unless given. */
export const makeKey = (
  program: Program,
  overrides: { readonly userHash?: Ids.UserHash; readonly ledger?: "live" | "test" } = {}
): StreakKey =>
  new StreakKey({
    projectId: program.projectId,
    programId: program.id,
    userHash: overrides.userHash ?? makeUserHash(),
    ledger: overrides.ledger ?? "live"
  })

/** An empty streak row of `key` in UTC, nothing due. */
export const makeRow = (key: StreakKey, overrides: Overrides<typeof StreakRow> = {}): StreakRow =>
  new StreakRow({
    projectId: key.projectId,
    programId: key.programId,
    userHash: key.userHash,
    ledger: key.ledger,
    run: 0,
    best: 0,
    timezone: "UTC",
    updatedAt: epoch,
    ...overrides
  })

/** `key` reaching `milestoneId` at `epoch` unless given. */
export const makeAchievement = (
  key: StreakKey,
  milestoneId: Ids.MilestoneId,
  achievedAt: Date = epoch
): Achievement =>
  new Achievement({
    projectId: key.projectId,
    programId: key.programId,
    userHash: key.userHash,
    ledger: key.ledger,
    milestoneId,
    achievedAt
  })

/** The same row with nothing due (exactOptionalPropertyTypes forbids `dueAt: undefined`). */
export const withoutDue = (row: StreakRow): StreakRow => {
  const fields: { -readonly [K in keyof Fields<typeof StreakRow>]: Fields<typeof StreakRow>[K] } = { ...row }
  delete fields.dueAt
  return new StreakRow(fields)
}

/** A counted live `streak_interaction` of a fresh member in `program`, at `epoch` in UTC. */
export const makeAction = (program: Program, overrides: Overrides<typeof ActionRecord> = {}): ActionRecord =>
  new ActionRecord({
    id: freshId("EventId"),
    projectId: program.projectId,
    programId: program.id,
    userHash: makeUserHash(),
    event: program.eventKey,
    eventType: "streak_interaction",
    door: "server",
    ledger: "live",
    ts: epoch,
    receivedAt: epoch,
    localDate: Calendar.localDate(overrides.ts ?? epoch, overrides.timezone ?? "UTC"),
    timezone: "UTC",
    counted: true,
    ...overrides
  })

/** A workspace, one of its projects, and one program of that project, as `seedTenant` stores them. */
export interface Tenant {
  readonly workspace: Workspace
  readonly project: Project
  readonly program: Program
}

/** A subscription of the tenant's program to every event type, created by a fresh API key id. */
export const makeSubscription = (tenant: Tenant, overrides: Overrides<typeof Subscription> = {}): Subscription =>
  new Subscription({
    id: freshId("SubscriptionId"),
    workspaceId: tenant.workspace.id,
    projectId: tenant.project.id,
    programId: tenant.program.id,
    url: "https://hooks.example.com/streaks",
    eventTypes: OutboundEventType.literals,
    secretSealed: `sealed:${randomHex(16)}`,
    createdBy: { type: "api_key", id: freshId("ApiKeyId") },
    createdAt: epoch,
    ...overrides
  })

/** A pending `milestone.achieved` message for `subscription`, due at `epoch`. */
export const makeMessage = (
  subscription: Subscription,
  overrides: Overrides<typeof OutboxMessage> = {}
): OutboxMessage =>
  new OutboxMessage({
    id: freshId("MessageId"),
    subscriptionId: subscription.id,
    projectId: subscription.projectId,
    programId: subscription.programId,
    type: "milestone.achieved",
    payload: JSON.stringify({ type: "milestone.achieved", data: { isTest: false } }),
    status: "pending",
    attempts: 0,
    nextAttemptAt: epoch,
    createdAt: epoch,
    ...overrides
  })

export const makeAttempt = (
  messageId: Ids.MessageId,
  overrides: Overrides<typeof DeliveryAttempt> = {}
): DeliveryAttempt =>
  new DeliveryAttempt({ messageId, attempt: 1, at: epoch, status: 200, latencyMs: 42, ...overrides })

export const makeApiKey = (workspaceId: Ids.WorkspaceId, overrides: Overrides<typeof ApiKey> = {}): ApiKey =>
  new ApiKey({
    id: freshId("ApiKeyId"),
    workspaceId,
    name: "Test key",
    tokenHash: randomHex(32),
    createdAt: epoch,
    ...overrides
  })

export const makeGrant = (
  workspaceIds: ReadonlyArray<Ids.WorkspaceId>,
  overrides: Overrides<typeof OAuthGrant> = {}
): OAuthGrant =>
  new OAuthGrant({
    id: freshId("OAuthGrantId"),
    workspaceIds,
    appName: "Test app",
    tokenHash: randomHex(32),
    createdAt: epoch,
    ...overrides
  })

/** A running experiment of `program` holding out 10 %. */
/** A running import job of a program, nothing received yet. */
export const makeImportJob = (projectId: Ids.ProjectId, programId: Ids.ProgramId, source = ""): ImportJob => ({
  id: freshId("ImportId"),
  projectId,
  programId,
  source,
  status: "running",
  received: 0,
  imported: 0,
  duplicates: 0,
  rejected: [],
  committedLine: 0,
  startedAt: epoch,
  heartbeatAt: epoch,
  loaded: false
})

export const makeExperiment = (program: Program, overrides: Overrides<typeof Experiment> = {}): Experiment =>
  new Experiment({
    id: freshId("ExperimentId"),
    projectId: program.projectId,
    programId: program.id,
    holdoutPercent: 10,
    startedAt: epoch,
    ...overrides
  })

/** Stores a fresh workspace, project and program (each with the given overrides) and returns them. */
export const seedTenant = (overrides: {
  readonly workspace?: Overrides<typeof Workspace>
  readonly project?: Overrides<typeof Project>
  readonly program?: Overrides<typeof Program>
} = {}): Effect.Effect<Tenant, StorageError, DirectoryStore> =>
  Effect.gen(function*() {
    const directory = yield* DirectoryStore
    const workspace = makeWorkspace(overrides.workspace)
    const project = makeProject(workspace.id, overrides.project)
    const program = makeProgram(project.id, overrides.program)
    yield* directory.createWorkspace(workspace)
    yield* directory.createProject(project)
    yield* directory.createProgram(program)
    return { workspace, project, program }
  })

/** Stores one more program in the tenant's project (fresh id, eventKey `other_<random>` unless given). */
export const seedProgram = (
  tenant: Tenant,
  overrides: Overrides<typeof Program> = {}
): Effect.Effect<Program, StorageError, DirectoryStore> =>
  Effect.gen(function*() {
    const program = makeProgram(tenant.project.id, { eventKey: `other_${randomHex(4)}`, ...overrides })
    yield* (yield* DirectoryStore).createProgram(program)
    return program
  })

/** The stored row of `key`, if any (`StreakStore.rows` of that key alone). */
export const rowOf = (key: StreakKey): Effect.Effect<Option.Option<StreakRow>, StorageError, StreakStore> =>
  Effect.flatMap(StreakStore, (streaks) => Effect.map(streaks.rows({ keys: [key] }), Arr.head))

/** The achievements of `key` (`AchievementStore.achieved` of that key alone). */
export const achievementsOf = (
  key: StreakKey
): Effect.Effect<ReadonlyArray<Achievement>, StorageError, AchievementStore> =>
  Effect.flatMap(AchievementStore, (achievements) => Effect.map(achievements.achieved([key]), (found) => found[0]!))

/** The member behind an id of a project, with the member's zone (`MemberStore.lookup` of that id alone). */
export const memberOf = (
  projectId: Ids.ProjectId,
  userHash: Ids.UserHash
): Effect.Effect<Member, StorageError, MemberStore> =>
  Effect.flatMap(MemberStore, (members) => Effect.map(members.lookup([{ projectId, userHash }]), (found) => found[0]!))
