/**
 * A batch's first round trip: the members' lookup, and with it the rows and achievements of the
 * keys as sent (lookahead) and the claims of the batch's idempotency keys made inside its
 * transaction (`IdempotencyStore.claimWithin`).
 */
import { Effect, Option } from "effect"
import { StreakKey, type StreakRow, unsafeMake } from "../Domain.js"
import type { StorageError } from "../Errors.js"
import type { MilestoneId } from "../Ids.js"
import {
  AchievementStore,
  type IdempotencyClaim,
  IdempotencyStore,
  type LockedRow,
  type Member,
  MemberStore,
  StreakStore
} from "../Ports.js"
import type { Work } from "./ingestApply.js"
import { plan } from "./ingestPlan.js"
import * as KeyClaims from "./keyClaims.js"
import { together } from "./together.js"

/** A key locked in the first round trip, before the members' lookup said whose it is. */
export interface Ahead {
  readonly key: StreakKey
  readonly row: Option.Option<StreakRow>
  /**
   * Its achieved milestones, read when its program has any; `undefined` when it has none, or when
   * the store did not know them with the row (`LockedRow`): the first round asks for them then.
   */
  readonly achieved: ReadonlyArray<MilestoneId> | undefined
}

/** Why a keyed action is not applied: its key is another request's, or already answered. */
export type Held = Exclude<IdempotencyClaim, { readonly _tag: "Claimed" }>

export interface Lookup {
  readonly found: ReadonlyArray<Member>
  /** By the action's index: its row and achievements, locked ahead. */
  readonly ahead: ReadonlyMap<number, Ahead>
  /** By the action's index: the keyed actions whose key was not claimed. */
  readonly held: ReadonlyMap<number, Held>
}

/** The key of the first counting action of each id as sent: what the first round may lock ahead. */
const aheadOf = (work: ReadonlyArray<Work>): Array<{ readonly i: number; readonly key: StreakKey }> => {
  const seen = new Set<string>()
  const out: Array<{ readonly i: number; readonly key: StreakKey }> = []
  work.forEach(({ action, door, program, project }, i) => {
    const who = `${project.id} ${action.userHash}`
    if (seen.has(who)) return
    seen.add(who)
    const { counting, ledger } = plan(project, program, action, door)
    if (!counting) return
    out.push({ i, key: unsafeMake(StreakKey, { projectId: project.id, programId: program.id, userHash: action.userHash, ledger }) })
  })
  return out
}

const none = <A>(): Effect.Effect<ReadonlyArray<A>> => Effect.succeed([])

/** A batch without keys to claim in it. */
const noClaims = { keyed: [] as ReadonlyArray<number>, claims: none<IdempotencyClaim>() }

/** The keyed actions' claims, inside the transaction, where the store has `claimWithin`. */
const claimsOf = (work: ReadonlyArray<Work>) =>
  Effect.map(IdempotencyStore, (store) => {
    if (store.claimWithin === undefined) return noClaims
    const keyed = work.flatMap((w, i) => (w.idempotencyKey === undefined ? [] : [i]))
    const claims = KeyClaims.claimDistinct(
      store.claimWithin,
      keyed.map((i) => ({ projectId: work[i]!.project.id, key: work[i]!.idempotencyKey!, now: work[i]!.now }))
    )
    return { keyed, claims }
  })

const noneHeld: ReadonlyMap<number, Held> = new Map()

const heldOf = (keyed: ReadonlyArray<number>, claims: ReadonlyArray<IdempotencyClaim>): ReadonlyMap<number, Held> => {
  if (keyed.length === 0) return noneHeld
  const held = new Map<number, Held>()
  keyed.forEach((i, n) => {
    const claim = claims[n]!
    if (claim._tag !== "Claimed") held.set(i, claim)
  })
  return held
}

/**
 * The members' lookup, and with it, in the same round trip, the claims of the keyed actions
 * (`claimInside`, on a store with `claimWithin`) and, where the store can lock without creating (`lockExisting`), the rows and
 * achievements of the keys as sent: most ids are no alias, so most of the first round's rows are
 * then known with the lookup (see `applyAll`). The achievements come with the rows where the store
 * keeps them there (`lockExistingWithAchieved`), else from `achievedMany` issued after the locks, so
 * that they include what a lock's last holder committed. Rows are locked ahead for actions whose
 * key turns out held, too: they stay locked, unchanged, until the commit.
 */
export const lookup = (
  work: ReadonlyArray<Work>,
  lookahead: boolean,
  claimInside: boolean
): Effect.Effect<Lookup, StorageError, MemberStore | StreakStore | AchievementStore | IdempotencyStore> =>
  Effect.gen(function*() {
    const members = yield* MemberStore
    const streaks = yield* StreakStore
    const { claims, keyed } = claimInside ? yield* claimsOf(work) : noClaims
    const refs = work.map((w) => ({ projectId: w.project.id, userHash: w.action.userHash }))
    const lockExisting = lookahead ? streaks.lockExisting : undefined
    const ahead = lockExisting === undefined ? [] : aheadOf(work)
    if (lockExisting === undefined || ahead.length === 0) {
      const [found, claimed] = keyed.length === 0
        ? [yield* members.lookupMany(refs), []]
        : yield* together([members.lookupMany(refs), claims])
      return { found, ahead: new Map(), held: heldOf(keyed, claimed) }
    }
    const keys = ahead.map((a) => a.key)
    const hasMilestones = (n: number) => work[ahead[n]!.i]!.program.milestones.length > 0
    const withAchieved = streaks.lockExistingWithAchieved
    // Without rows that carry their achievements, those of the keys whose program has milestones
    // are read after the locks, in the same round trip.
    const asked = withAchieved !== undefined ? [] : keys.flatMap((_, n) => (hasMilestones(n) ? [n] : []))
    const first = [
      members.lookupMany(refs),
      withAchieved !== undefined
        ? withAchieved(keys.map((key, n) => ({ key, withAchieved: hasMilestones(n) })))
        : Effect.map(lockExisting(keys), (rows) => rows.map(unknownAchieved)),
      asked.length === 0
        ? none<ReadonlyArray<MilestoneId>>()
        : Effect.flatMap(AchievementStore, (a) => a.achievedMany(asked.map((n) => keys[n]!)))
    ] as const
    // Without keys, the batch's first round trip is what it was before claims went in it.
    const [found, rows, achieved, claimed] = keyed.length === 0
      ? [...yield* together(first), []] as const
      : yield* together([...first, claims])
    const achievedOf = new Map(asked.map((n, m) => [n, achieved[m]!]))
    return {
      found,
      ahead: new Map(ahead.map(({ i, key }, n) => {
        const row = rows[n]!
        const known = Option.isSome(row) ? row.value.achieved : undefined
        return [i, { key, row: Option.map(row, (r) => r.row), achieved: known ?? achievedOf.get(n) }]
      })),
      held: heldOf(keyed, claimed)
    }
  })

const unknownAchieved = (row: Option.Option<StreakRow>): Option.Option<LockedRow> =>
  Option.map(row, (r) => ({ row: r, achieved: undefined }))
