/**
 * Linking an anonymous visitor to an authenticated member (docs/api.md#aliases): from then on the
 * anonymous id counts for the member, and what it already did is merged into the member's streaks.
 */
import { Context, Effect, Layer, Option } from "effect"
import * as Credentials from "./Credentials.js"
import { Achievement, type Project, StreakKey, type StreakRow } from "./Domain.js"
import { AliasConflict, type InvalidBody, InvalidAliasToken, type InvalidSiteKey, type StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import type { UserHash } from "./Ids.js"
import { resolveProject } from "./internal/ingestAuth.js"
import { memberZone, nowDate, settle } from "./internal/streakProgress.js"
import { OutboxSignal } from "./OutboundEvents.js"
import {
  AchievementStore,
  DirectoryStore,
  type ExperimentStore,
  type Member,
  MemberStore,
  type Outbox,
  StreakStore,
  type SubscriptionStore,
  Transactor
} from "./Ports.js"
import { SecretBox } from "./SecretBox.js"
import * as Policy from "./Policy.js"
import * as Streak from "./Streak.js"

export interface LinkInput {
  readonly siteKey: string
  readonly anonymousId: string
  readonly userHash: string
}

/** `"linked"` the first time; `"unchanged"` when the pair already existed (a no-op). */
export type LinkResult = "linked" | "unchanged"

export class Aliases extends Context.Tag("@streaks/core/Aliases")<Aliases, {
  /**
   * `POST /admin/alias`: INVALID_BODY (ids over 256 characters or e-mails), INVALID_SITE_KEY,
   * ALIAS_CONFLICT when the anonymous id is linked to another member. Linking merges, in one
   * transaction, every streak of the anonymous id into the member's (see `merge`).
   */
  readonly link: (
    input: LinkInput
  ) => Effect.Effect<LinkResult, InvalidBody | InvalidSiteKey | AliasConflict | StorageError>
  /** `POST /v1/alias`: INVALID_SITE_KEY, then INVALID_ALIAS_TOKEN for a bad or expired token, then as `link`. */
  readonly linkWithToken: (input: { readonly siteKey: string; readonly token: string }) => Effect.Effect<
    LinkResult,
    InvalidSiteKey | InvalidAliasToken | AliasConflict | StorageError
  >
}>() {}

export type Requirements =
  | Transactor
  | DirectoryStore
  | MemberStore
  | StreakStore
  | AchievementStore
  | SubscriptionStore
  | Outbox
  | ExperimentStore
  | SecretBox
  | OutboxSignal

type MergeServices = Exclude<Requirements, Transactor | SecretBox | OutboxSignal>

/**
 * Moves every streak of `anonymousId` (each program and ledger) into `member`: active days are
 * unioned, the row is recomputed from all days, achievements of either id stay achieved (a person
 * reaches a milestone once, whichever id they used), milestones newly reached by the merged streak
 * are recorded and fire as on ingest, and the anonymous rows are removed. Returns messages enqueued.
 */
const merge = (
  projectId: StreakKey["projectId"],
  anonymousId: UserHash,
  member: UserHash,
  zone: string
): Effect.Effect<number, StorageError, MergeServices> =>
  Effect.gen(function*() {
    const directory = yield* DirectoryStore
    const streaks = yield* StreakStore
    const achievements = yield* AchievementStore
    const project = Option.getOrUndefined(yield* directory.project(projectId))
    const now = yield* nowDate
    let enqueued = 0
    for (const found of yield* streaks.rows({ projectId, userHash: anonymousId })) {
      const from = new StreakKey({
        projectId: found.projectId,
        programId: found.programId,
        userHash: found.userHash,
        ledger: found.ledger
      })
      const to = new StreakKey({ ...from, userHash: member })
      // Locking the anonymous row too serialises the merge with actions still sent under its id.
      const [fromRow, row] = (yield* streaks.lock([{ key: from, timezone: zone }, { key: to, timezone: zone }])) as [
        StreakRow,
        StreakRow
      ]
      const days = yield* streaks.days(from)
      const added = (yield* streaks.addDays(days.map((day) => ({ key: to, day })))).some(Boolean)
      const [achieved] = yield* achievements.achieved([from])
      yield* achievements.add(achieved!.map((a) => new Achievement({ ...a, userHash: member })))
      yield* streaks.remove(from)

      const program = Option.getOrUndefined(yield* directory.program(from.programId))
      if (!added || program === undefined || project === undefined) continue
      const policy = Policy.of(program)
      // Freezes granted to the anonymous id go with its days.
      const grants = [...(row.grants ?? []), ...(fromRow.grants ?? [])]
      const summary = Streak.fromDays(yield* streaks.days(to), zone, policy, grants)
      enqueued += (yield* settle({ project, program, key: to, row, summary, zone, now })).enqueued
    }
    return enqueued
  })

export const make: Effect.Effect<Aliases["Type"], never, Requirements> = Effect.gen(function*() {
  const context = yield* Effect.context<Requirements>()
  const transactor = yield* Transactor
  const members = yield* MemberStore
  const directory = yield* DirectoryStore
  const box = yield* SecretBox
  const signal = yield* OutboxSignal

  const linkIds = (project: Project, anonymousId: UserHash, userHash: UserHash) =>
    Effect.gen(function*() {
      if (anonymousId === userHash) return "unchanged" as const
      const enqueued = yield* transactor.withTransaction(Effect.gen(function*() {
        // Linking to an id that is itself an alias links to the member behind it.
        const [anonymous, target] = (yield* members.lookup([
          { projectId: project.id, userHash: anonymousId },
          { projectId: project.id, userHash }
        ])) as [Member, Member]
        if (target.userHash === anonymousId) {
          return yield* new AliasConflict({ message: "the member is already linked to this anonymous id" })
        }
        const linked = yield* members.link(project.id, anonymousId, target.userHash)
        if (linked === "unchanged") return undefined
        if (linked !== "linked") {
          return yield* new AliasConflict({ message: "anonymousId is already linked to another member" })
        }
        // A member who never sent `tz` inherits the zone their anonymous visits used.
        if (Option.isNone(target.timezone) && Option.isSome(anonymous.timezone)) {
          yield* members.setTimezone(project.id, target.userHash, anonymous.timezone.value)
        }
        const zone = memberZone(Option.orElse(target.timezone, () => anonymous.timezone), project)
        return yield* merge(project.id, anonymousId, target.userHash, zone)
      }))
      if (enqueued === undefined) return "unchanged" as const
      if (enqueued > 0) yield* signal.notify
      return "linked" as const
    }).pipe(Effect.provide(context))

  const link = (input: LinkInput) =>
    Effect.gen(function*() {
      const anonymousId = yield* EventInput.decodeUserHash("anonymousId", input.anonymousId)
      const userHash = yield* EventInput.decodeUserHash("userHash", input.userHash)
      return yield* linkIds(yield* resolveProject(directory, input.siteKey), anonymousId, userHash)
    }).pipe(Effect.provide(context))

  const invalidToken = new InvalidAliasToken({ message: "alias token is invalid or expired" })

  const linkWithToken = (input: { readonly siteKey: string; readonly token: string }) =>
    Effect.gen(function*() {
      const project = yield* resolveProject(directory, input.siteKey)
      const secret = box.open(project.signingSecretSealed)
      if (secret === undefined) return yield* invalidToken
      const claims = yield* Credentials.verifyAliasToken(input.token, secret, project.siteKey)
      if (Option.isNone(claims)) return yield* invalidToken
      // Claims that are not valid member ids make the token itself invalid.
      const ids = yield* Effect.all([
        EventInput.decodeUserHash("anon", claims.value.anonymousId),
        EventInput.decodeUserHash("sub", claims.value.userHash)
      ]).pipe(Effect.mapError(() => invalidToken))
      return yield* linkIds(project, ids[0], ids[1])
    }).pipe(Effect.provide(context))

  return Aliases.of({ link, linkWithToken })
})

export const layer: Layer.Layer<Aliases, never, Requirements> = Layer.effect(Aliases, make)
