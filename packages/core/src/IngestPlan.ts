/**
 * The counting rule of ingest as one pure function: from a group of authorised actions and what
 * the store read for them (`IngestStore.Snapshot`), the changes to write and each action's answer.
 * Days, streaks, milestones, events, usage and idempotency answers are decided here, without I/O.
 */
import { Option } from "effect"
import * as Calendar from "./Calendar.js"
import {
  Achievement,
  ActionRecord,
  type Door,
  type Ledger,
  type OutboxMessage,
  Program,
  type Project,
  type StoredResponse,
  type StreakKey,
  type StreakRow,
  unsafeMake
} from "./Domain.js"
import type { Action } from "./EventInput.js"
import type { EventId, MessageId, ProgramId, UserHash } from "./Ids.js"
import type {
  Changes,
  KeyAnswer,
  KeyRequest,
  LoadRequest,
  MemberRequest,
  Snapshot,
  ZoneChange
} from "./IngestRecords.js"
import { keyOf } from "./IngestRecords.js"
import * as OutboundEvents from "./OutboundEvents.js"
import * as Policy from "./Policy.js"
import type { IdempotencyClaim } from "./IngestRecords.js"
import type { UsageEntry } from "./Usage.js"
import * as Streak from "./Streak.js"
import * as Usage from "./Usage.js"
import { memberZone, notifiedOf, rowOf, summaryOf } from "./internal/streakProgress.js"

/** One authorised action: its project, the program that counts it, and the door it came through. */
export interface Work {
  readonly project: Project
  readonly program: Program
  readonly action: Action
  readonly door: Door
  /** When it was received. */
  readonly now: Date
}

/** The body a door answers with (public doors add `ok: true`; the REST door does not). */
export interface AnswerBody {
  readonly ok?: true
  readonly counted?: boolean
  readonly reason?: string
  readonly duplicate?: boolean
}

/** What became of one action. */
export type Answer =
  | { readonly _tag: "Applied"; readonly body: AnswerBody }
  /** Its idempotency key was completed before: the stored answer, and nothing changes. */
  | { readonly _tag: "Replayed"; readonly response: StoredResponse }
  /** Its idempotency key is held by a request still being processed. */
  | { readonly _tag: "InProgress" }
  /** Planning it raised a defect: it alone fails. */
  | { readonly _tag: "Defect"; readonly defect: unknown }

export type Result =
  | {
    readonly _tag: "Planned"
    readonly changes: Changes
    /** In the group's order. */
    readonly answers: ReadonlyArray<Answer>
    /** Test programs that the group made live. */
    readonly goLive: ReadonlyArray<ProgramId>
  }
  /**
   * Plan again once these are read: the active days of keys that late actions land in
   * (`IngestStore.history`), the audience of programs whose milestones were crossed
   * (`IngestStore.audience`). Most groups need neither.
   */
  | { readonly _tag: "Needs"; readonly keys: ReadonlyArray<StreakKey>; readonly programs: ReadonlyArray<ProgramId> }

/** Fresh ids for the records and messages a plan writes. */
export interface Ids {
  readonly event: () => EventId
  readonly message: () => MessageId
}

/** Everything the planner reads. */
export interface Input {
  readonly work: ReadonlyArray<Work>
  readonly snapshot: Snapshot
  /** Active days of the keys a previous plan asked for, by `IngestStore.keyOf`. */
  readonly history: ReadonlyMap<string, ReadonlyArray<Calendar.LocalDate>>
  /** The audience of the programs a previous plan asked for. */
  readonly audience?: OutboundEvents.Audience | undefined
  readonly ids: Ids
  /** `request(work)`, when the caller made it already (to load the snapshot). */
  readonly request?: LoadRequest | undefined
  /** A hook for tests that inject a defect into one action's planning. */
  readonly check?: ((work: Work) => void) | undefined
}

/** How an action counts: its ledger, whether it marks a day, whether it makes its program live. */
export interface Counting {
  readonly ledger: Ledger
  readonly counting: boolean
  /** A real action in a test program: it goes to the live ledger and makes the program live. */
  readonly promote: boolean
  readonly reason?: string
}

/** The ledger and counting rule of an action (docs/api.md#test-and-live, #browser-counting). */
export const counting = (project: Project, program: Program, action: Action, door: Door): Counting => {
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

/** The body of a door's 202 answer. */
export const answerBody = (
  door: Door,
  counted: boolean,
  reason: string | undefined,
  duplicate: boolean
): AnswerBody => {
  const body: { ok?: true; counted: boolean; reason?: string; duplicate?: true } = door === "api"
    ? { counted }
    : { ok: true, counted }
  if (reason !== undefined) body.reason = reason
  if (duplicate) body.duplicate = true
  return body
}

/**
 * The idempotency key of an action as stored: keys are scoped per door (and project), so a key
 * first used on one door never answers for another (docs/api.md).
 */
export const scopedKey = (work: Work): string | undefined =>
  work.action.idempotencyKey === undefined ? undefined : `${work.door}:${work.action.idempotencyKey}`

const byProjectThenKey = (a: KeyRequest, b: KeyRequest) =>
  a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0

/** What `IngestStore.load` must read for a group of actions. */
export const request = (work: ReadonlyArray<Work>): LoadRequest => {
  const keys = new Map<string, KeyRequest>()
  // A key sent twice in one group is claimed by its first action; the later ones lock nothing.
  const repeats = new Set<number>()
  const pairs = work.map((w, i) => {
    const key = scopedKey(w)
    if (key === undefined) return undefined
    const pair = `${w.project.id}/${key}`
    if (keys.has(pair)) repeats.add(i)
    else keys.set(pair, { projectId: w.project.id, key, now: w.now })
    return pair
  })
  const sorted = [...keys.values()].sort(byProjectThenKey)
  const position = new Map(sorted.map((k, i) => [`${k.projectId}/${k.key}`, i]))
  const members = work.map((w, i): MemberRequest => {
    const pair = pairs[i]
    const keyed = pair === undefined ? {} : { key: position.get(pair)! }
    const c = counting(w.project, w.program, w.action, w.door)
    if (!c.counting || repeats.has(i)) return { projectId: w.project.id, userHash: w.action.userHash, ...keyed }
    const withAchieved = w.program.milestones.length > 0
    return {
      projectId: w.project.id,
      userHash: w.action.userHash,
      ...keyed,
      streak: {
        programId: w.program.id,
        ledger: c.ledger,
        timezone: w.action.tz ?? w.project.timezone,
        withAchieved
      }
    }
  })
  return { members, keys: sorted }
}

/** The plan's view of one streak while the group's actions are applied to it in order. */
interface KeyState {
  readonly key: StreakKey
  readonly row: StreakRow
  readonly achieved: ReadonlySet<string>
  /** Days this group added, for a late action of the same group. */
  readonly added: ReadonlyArray<Calendar.LocalDate>
  /** Whether the row must be written. */
  readonly changed: boolean
}

/** What one action did, merged into the plan only once it was worked out whole. */
interface Step {
  readonly _tag: "Step"
  readonly body: AnswerBody
  readonly record: ActionRecord
  readonly zone: ZoneChange | undefined
  readonly state: KeyState | undefined
  readonly day: Calendar.LocalDate | undefined
  readonly achievements: ReadonlyArray<Achievement>
  readonly outbox: ReadonlyArray<OutboxMessage>
  readonly usage: UsageEntry | undefined
  readonly goLive: ProgramId | undefined
}

/** What one action's plan lacks: the history of its key (a late action), or its program's audience. */
type Need =
  | { readonly _tag: "NeedsHistory"; readonly key: StreakKey }
  | { readonly _tag: "NeedsAudience"; readonly program: ProgramId }

const claimsByKey = (request: LoadRequest, claims: ReadonlyArray<IdempotencyClaim>) =>
  new Map(request.keys.map((k, i) => [`${k.projectId}/${k.key}`, claims[i]!]))

/**
 * Plans a group of authorised actions as if they were applied one after another in arrival order.
 * Each action's zone is its `tz` (which becomes the member's zone), else the member's, else the
 * project's, else UTC; its activity day is the local date of its `ts` (default: receipt) there.
 * A day already active moves nothing; a new day extends the streak in O(1), and a day older than
 * the row's last active day recomputes from the key's history (asked for with `Needs`).
 * Milestones are judged on the state at receipt; their events fire for live programs on the live
 * ledger, for members outside a running experiment's control group, to each subscription listening.
 * A defect while planning one action fails that action alone.
 */
export const plan = (input: Input): Result => {
  const { history, ids, snapshot, work } = input
  const loadRequest = input.request ?? request(work)
  const claimOf = claimsByKey(loadRequest, snapshot.claims)
  const seenKeys = new Set<string>()
  const states = new Map<string, KeyState>()
  const zones = new Map<string, ZoneChange>()
  const answers: Array<Answer> = []
  const steps: Array<Step> = []
  const answered: Array<KeyAnswer> = []
  const missing = new Map<string, StreakKey>()
  const unheard = new Set<ProgramId>()
  const live = new Set<ProgramId>()

  work.forEach((w, i) => {
    const key = scopedKey(w)
    if (key !== undefined) {
      const pair = `${w.project.id}/${key}`
      const claim = claimOf.get(pair)!
      const repeat = seenKeys.has(pair)
      seenKeys.add(pair)
      // A key sent twice in one group is claimed by the first; the later one finds it in progress.
      if (repeat || claim._tag === "InProgress") return answers.push({ _tag: "InProgress" })
      if (claim._tag === "Completed") return answers.push({ _tag: "Replayed", response: claim.response })
    }
    let step: Step | Need
    try {
      input.check?.(w)
      step = planOne(w, snapshot.members[i]!, loadRequest.members[i]!, {
        states,
        zones,
        history,
        ids,
        audience: input.audience,
        live
      })
    } catch (defect) {
      // Ingest rolls the group back and tries each action alone: the key claimed with it is freed.
      return answers.push({ _tag: "Defect", defect })
    }
    if (step._tag === "NeedsHistory") {
      missing.set(keyOf(step.key), step.key)
      return answers.push({ _tag: "Applied", body: {} })
    }
    if (step._tag === "NeedsAudience") {
      unheard.add(step.program)
      return answers.push({ _tag: "Applied", body: {} })
    }
    if (step.state !== undefined) states.set(keyOf(step.state.key), step.state)
    if (step.zone !== undefined) zones.set(`${step.zone.projectId} ${step.zone.userHash}`, step.zone)
    if (step.goLive !== undefined) live.add(step.goLive)
    steps.push(step)
    answers.push({ _tag: "Applied", body: step.body })
    if (key !== undefined) {
      answered.push({ projectId: w.project.id, key, response: { status: 202, body: step.body }, now: w.now })
    }
  })
  if (missing.size + unheard.size > 0) return { _tag: "Needs", keys: [...missing.values()], programs: [...unheard] }

  const usage = new Map<string, UsageEntry>()
  for (const s of steps) {
    if (s.usage !== undefined) usage.set(`${s.usage.workspaceId} ${s.usage.month} ${s.usage.member}`, s.usage)
  }
  return {
    _tag: "Planned",
    answers,
    goLive: [...live],
    changes: {
      days: steps.flatMap((s) => (s.day === undefined ? [] : [{ key: s.state!.key, day: s.day }])),
      rows: [...states.values()].flatMap((s) => (s.changed ? [s.row] : [])),
      achievements: steps.flatMap((s) => s.achievements),
      usage: [...usage.values()],
      // In one order (by member), so that groups storing the zones of the same members cannot deadlock.
      zones: [...zones].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, z]) => z),
      actions: steps.map((s) => s.record),
      outbox: steps.flatMap((s) => s.outbox),
      answers: answered,
      ...(snapshot.forCommit === undefined ? {} : { forCommit: snapshot.forCommit })
    }
  }
}

interface Group {
  readonly states: ReadonlyMap<string, KeyState>
  readonly zones: ReadonlyMap<string, ZoneChange>
  readonly history: ReadonlyMap<string, ReadonlyArray<Calendar.LocalDate>>
  readonly ids: Ids
  readonly audience: OutboundEvents.Audience | undefined
  /** Programs an earlier action of the group made live. */
  readonly live: ReadonlySet<ProgramId>
}

const planOne = (
  w: Work,
  loaded: Snapshot["members"][number],
  asked: MemberRequest,
  group: Group
): Step | Need => {
  const { action, door, now, project } = w
  const program = group.live.has(w.program.id) ? liveProgram(w.program) : w.program
  const userHash = loaded.member.userHash
  const who = `${project.id} ${userHash}`
  const stored = group.zones.get(who)?.timezone
  const storedZone = stored === undefined ? loaded.member.timezone : Option.some(stored)
  const zone = action.tz ?? memberZone(storedZone, project)
  const at = action.ts ?? now
  const day = Calendar.activityDay(at, zone, Policy.of(program).dayStartHour)
  const c = counting(project, w.program, action, door)
  const zoneChange: ZoneChange | undefined = action.tz !== undefined && Option.getOrUndefined(storedZone) !== action.tz
    ? { projectId: project.id, userHash, timezone: action.tz }
    : undefined
  const record = (moved: boolean) => recordOf(w, c.ledger, userHash, zone, at, day, moved, group.ids.event())
  const nothing = {
    _tag: "Step" as const,
    zone: zoneChange,
    state: undefined,
    day: undefined,
    achievements: [],
    outbox: [],
    usage: undefined,
    goLive: undefined
  }
  if (!c.counting || loaded.streak === undefined || asked.streak === undefined) {
    return { ...nothing, body: answerBody(door, c.counting, c.reason, false), record: record(false) }
  }

  const name = keyOf(loaded.streak.key)
  const before: KeyState = group.states.get(name) ?? {
    key: loaded.streak.key,
    row: loaded.streak.row,
    achieved: loaded.streak.achieved.length === 0 ? noneAchieved : new Set(loaded.streak.achieved),
    added: [],
    changed: false
  }
  const policy = Policy.of(program)
  const summary = summaryOf(before.row, policy, program)
  const applied = Streak.applyDay(summary, day, zone, policy)
  let next: Streak.Summary | undefined
  let earned = false
  if (applied._tag === "Applied") {
    next = applied.summary
    earned = applied.earned
  } else if (applied._tag === "NeedsHistory") {
    const days = group.history.get(name)
    if (days === undefined) return { _tag: "NeedsHistory", key: before.key }
    if (!days.includes(day) && !before.added.includes(day)) {
      const known = [...days, ...before.added]
      const after = Streak.replay([...known, day], zone, policy, summary.grants, summary.forgiveness)
      next = after.summary
      // A late day may complete a period and earn a freeze that the history had not.
      earned = policy.freezes.earnEvery > 0 && after.earned >
          Streak.replay(known, zone, policy, summary.grants, summary.forgiveness).earned
    }
  }
  if (next === undefined) {
    // Nothing moved, but the member's zone did: due instants follow it.
    const state = before.row.timezone === zone
      ? before
      : {
        ...before,
        row: rowOf(before.key, summary, zone, notifiedOf(before.row), now, policy, before.row),
        changed: true
      }
    return { ...nothing, state, body: answerBody(door, true, c.reason, true), record: record(false) }
  }

  const counted = c.promote ? liveProgram(program) : program
  // Milestones are judged on the streak as it stands at receipt; a program without any skips that.
  const streakNow = counted.milestones.length === 0 && !earned ? undefined : Streak.evaluate(next, now, zone, policy)
  const crossed = streakNow === undefined || counted.milestones.length === 0
    ? []
    : Streak.newlyCrossed(counted.milestones, streakNow.current, before.achieved)
  const achievements = crossed.map((m) =>
    unsafeMake(Achievement, {
      projectId: before.key.projectId,
      programId: before.key.programId,
      userHash: before.key.userHash,
      ledger: before.key.ledger,
      milestoneId: m.id,
      achievedAt: now
    })
  )
  const events: Array<OutboundEvents.Event> = crossed.flatMap(OutboundEvents.milestoneEvents)
  if (earned) events.push({ type: "streak.freeze_earned", freezesAvailable: streakNow!.freezes, timezone: zone })
  const subject: OutboundEvents.Subject | undefined = events.length === 0 ? undefined : {
    project,
    program: counted,
    userHash,
    ledger: c.ledger,
    streak: { current: streakNow!.current, best: streakNow!.best }
  }
  const heard = subject === undefined ? undefined : OutboundEvents.hearing(subject, group.audience)
  if (heard?._tag === "NeedsAudience") return heard
  const outbox = heard?._tag === "Heard"
    ? OutboundEvents.deliveries(subject!, events, heard.subscriptions, now, group.ids.message)
    : []
  const state: KeyState = {
    key: before.key,
    row: rowOf(before.key, next, zone, notifiedOf(before.row), now, policy, before.row),
    achieved: crossed.length === 0 ? before.achieved : new Set([...before.achieved, ...crossed.map((m) => m.id)]),
    added: [...before.added, day],
    changed: true
  }
  return {
    _tag: "Step",
    zone: zoneChange,
    state,
    day,
    achievements,
    outbox,
    usage: c.ledger === "live" ? Usage.activeEntry(project.workspaceId, project.id, userHash, at) : undefined,
    goLive: c.promote && w.program.status === "test" ? w.program.id : undefined,
    body: answerBody(door, true, c.reason, false),
    record: record(true)
  }
}

const noneAchieved: ReadonlySet<string> = new Set()

const liveProgram = (program: Program): Program =>
  program.status === "live" ? program : new Program({ ...program, status: "live" })

const recordOf = (
  { action, door, now, program, project }: Work,
  ledger: Ledger,
  userHash: UserHash,
  zone: string,
  at: Date,
  day: Calendar.LocalDate,
  counted: boolean,
  id: EventId
): ActionRecord =>
  unsafeMake(ActionRecord, {
    id,
    projectId: project.id,
    programId: program.id,
    userHash,
    event: action.event ?? program.eventKey,
    eventType: action.eventType,
    door,
    ledger,
    ts: at,
    receivedAt: now,
    localDate: day,
    timezone: zone,
    counted,
    // `source` is a label of signed server events
    // (docs/api.md#record-an-action-post-v1e-and-post-v1servere); a browser cannot vouch for it.
    ...(action.source === undefined || door !== "server" ? {} : { source: action.source }),
    ...(action.externalService === undefined ? {} : { externalService: action.externalService }),
    ...(action.integrationId === undefined ? {} : { integrationId: action.integrationId }),
    ...(action.sessionId === undefined ? {} : { sessionId: action.sessionId }),
    ...(action.idempotencyKey === undefined ? {} : { idempotencyKey: action.idempotencyKey }),
    ...(action.extra === undefined ? {} : { extra: action.extra })
  })
