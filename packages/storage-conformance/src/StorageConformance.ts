/**
 * `storageConformance`: the one suite every storage adapter runs, so that all adapters keep the
 * MUST rules of `@streaks/core/Ports` (each area's suite lives in `internal/<area>.ts`).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { IngestStore } from "@streaks/core/IngestStore"
import {
  AchievementStore,
  ActionLog,
  Catalog,
  DirectoryStore,
  ExperimentStore,
  IdempotencyStore,
  MemberStore,
  Outbox,
  type Storage,
  StreakStore,
  SubscriptionStore,
  Transactor,
  UsageStore
} from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import * as StorageLayer from "@streaks/core/Storage"
import { accountsSuite, auditSuite, deliveriesLogSuite } from "./internal/accounts.js"
import { aggregatesSuite } from "./internal/aggregates.js"
import { proofSuite } from "./internal/proof.js"
import { rollupsSuite } from "./internal/rollups.js"
import { batchSuite } from "./internal/batches.js"
import { actionLogSuite, idempotencySuite, outboxSuite, subscriptionSuite } from "./internal/delivery.js"
import {
  achievementsOf,
  day,
  epoch,
  makeAchievement,
  makeAction,
  makeExperiment,
  makeKey,
  makeMessage,
  makeProgram,
  makeRow,
  makeSubscription,
  makeUserHash,
  memberOf,
  randomHex,
  rowOf,
  seedTenant
} from "./Fixtures.js"
import { importSuite } from "./internal/imports.js"
import { ingestSuite } from "./internal/ingest.js"
import { oauthSuite } from "./internal/oauth.js"
import { Boom, type It, type Origin, Origins } from "./internal/kit.js"
import { standingSuite } from "./internal/standing.js"
import { achievementSuite, streakSuite, transactorSuite } from "./internal/streaks.js"
import {
  catalogSuite,
  credentialSuite,
  directorySuite,
  experimentSuite,
  memberSuite,
  usageSuite
} from "./internal/tenancy.js"

const rollbackSuite = (it: It) =>
  describe("Transactor rollback", () => {
    it.effect("a failing unit of work leaves no row, day, achievement, action, usage mark, outbox message, catalog change or other write behind", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const catalog = yield* Catalog
        const directory = yield* DirectoryStore
        const members = yield* MemberStore
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const log = yield* ActionLog
        const idempotency = yield* IdempotencyStore
        const subscriptions = yield* SubscriptionStore
        const outbox = yield* Outbox
        const usage = yield* UsageStore
        const experiments = yield* ExperimentStore
        const tenant = yield* seedTenant()
        const { workspace, project, program } = tenant
        const key = makeKey(program)
        const anon = makeUserHash()
        const idemKey = `idem-${randomHex(8)}`
        const action = makeAction(program, { userHash: key.userHash })
        const subscription = makeSubscription(tenant)
        const kept = makeSubscription(tenant)
        const message = makeMessage(subscription, { nextAttemptAt: new Date("2100-01-01T00:00:00.000Z") })
        const newProgram = makeProgram(project.id, { eventKey: `rolled_back_${randomHex(4)}` })
        // Written before the unit of work: its removal inside it must be undone too.
        const removed = makeKey(program)
        yield* subscriptions.create(kept)
        yield* streaks.save([makeRow(removed, { run: 2, best: 2, lastActiveDay: day("2024-03-02") })])
        yield* streaks.addDays([{ key: removed, day: day("2024-03-02") }])
        yield* achievements.add([makeAchievement(removed, program.milestones[0]!.id)])
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          yield* idempotency.claim([{ projectId: project.id, key: idemKey, now: epoch }])
          yield* members.setTimezones([{ projectId: project.id, userHash: key.userHash, timezone: "Europe/Paris" }])
          yield* members.link(project.id, anon, key.userHash)
          yield* streaks.lock([{ key, timezone: "Europe/Paris" }])
          yield* streaks.addDays([{ key, day: day("2024-03-01") }])
          yield* streaks.save([makeRow(key, { run: 1, best: 1, lastActiveDay: day("2024-03-01") })])
          yield* streaks.remove(removed)
          yield* achievements.add([makeAchievement(key, program.milestones[0]!.id)])
          yield* log.append([action])
          yield* usage.markActive([{ workspaceId: workspace.id, month: "2024-03", member: key.userHash }])
          yield* subscriptions.create(subscription)
          yield* catalog.remove("subscription", { id: kept.id })
          yield* outbox.enqueue([message])
          yield* experiments.start(makeExperiment(program))
          yield* directory.createProgram(newProgram)
          yield* directory.goLive(program.id)
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        assert.isTrue(Option.isNone(yield* rowOf(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
        assert.deepStrictEqual(yield* streaks.rows({ projectId: project.id, userHash: key.userHash }), [])
        assert.deepStrictEqual(yield* achievementsOf(key), [])
        assert.strictEqual(Option.getOrThrow(yield* rowOf(removed)).run, 2)
        assert.deepStrictEqual(yield* streaks.days(removed), [day("2024-03-02")])
        assert.strictEqual((yield* achievementsOf(removed)).length, 1)
        assert.deepStrictEqual(
          yield* log.countsByDay({
            programIds: [program.id],
            from: epoch,
            to: new Date(epoch.getTime() + 1),
            ledger: "live"
          }),
          []
        )
        assert.strictEqual(yield* usage.activeCount(workspace.id, "2024-03"), 0)
        assert.isTrue(Option.isNone(yield* subscriptions.get(subscription.id)))
        assert.isTrue(Option.isSome(yield* subscriptions.get(kept.id)))
        // Settling needs the message pending under the lease it was stored with: none was stored.
        assert.isFalse(
          yield* outbox.settle({ id: message.id, leaseUntil: message.nextAttemptAt }, { _tag: "Failed", attempts: 0 })
        )
        assert.isTrue(Option.isNone(yield* experiments.running(program.id)))
        assert.isTrue(Option.isNone(yield* directory.program(newProgram.id)))
        assert.strictEqual(Option.getOrThrow(yield* directory.program(program.id)).status, "test")
        assert.strictEqual((yield* memberOf(project.id, anon)).userHash, anon)
        assert.isTrue(Option.isNone((yield* memberOf(project.id, key.userHash)).timezone))
        assert.deepStrictEqual(yield* idempotency.claim([{ projectId: project.id, key: idemKey, now: epoch }]), [{
          _tag: "Claimed"
        }])
      }))

    it.effect("an idempotency key claimed in a unit of work that fails is free again; one claimed in a committed unit is not", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const idempotency = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const [dropped, kept] = [`idem-${randomHex(8)}`, `idem-${randomHex(8)}`]
        const error = yield* Effect.flip(tx.withTransaction(
          Effect.zipRight(idempotency.claim([{ projectId: project.id, key: dropped, now: epoch }]), new Boom())
        ))
        assert.strictEqual(error._tag, "Boom")
        assert.deepStrictEqual(yield* idempotency.claim([{ projectId: project.id, key: dropped, now: epoch }]), [{
          _tag: "Claimed"
        }])
        assert.deepStrictEqual(
          yield* tx.withTransaction(idempotency.claim([{ projectId: project.id, key: kept, now: epoch }])),
          [{ _tag: "Claimed" }]
        )
        assert.deepStrictEqual(yield* idempotency.claim([{ projectId: project.id, key: kept, now: epoch }]), [{
          _tag: "InProgress"
        }])
      }))
  })

/**
 * The adapter's layer completed by `Storage.layer`, with the origin of its `IngestStore` and
 * `StateStore`: one the adapter provides is its own, one `Storage.layer` lifted from its ports
 * (now, or when the adapter's layer was completed already) is not.
 */
const completed = <E>(storage: Layer.Layer<Storage, E>): Layer.Layer<StorageLayer.Complete | Origins, E> =>
  Layer.flatMap(storage, (context) => {
    const originOf = <I, S extends object>(tag: Context.Tag<I, S>): Origin =>
      Option.match(Context.getOption(context as Context.Context<unknown>, tag), {
        onNone: () => "lifted",
        onSome: (store) => (StorageLayer.isLifted(store) ? "lifted" : "own")
      })
    return Layer.merge(
      StorageLayer.layer(Layer.succeedContext(context)),
      Layer.succeed(Origins, { ingest: originOf(IngestStore), state: originOf(StateStore) })
    )
  })

/**
 * Registers the conformance suite of a storage adapter under `name`. `storage` provides the
 * adapter's ports, and may provide more (its own `IngestStore` or `StateStore`, or everything
 * `Storage.layer` adds); the suite completes it with `Storage.layer`, so the stores core builds on
 * the ports are checked on the adapter's ports too. The suites of `IngestStore` and
 * `StateStore.standing` are registered once per origin ("the adapter's own", "lifted from its
 * ports"): the one that does not apply reports its tests skipped.
 *
 * The layer is built once for the whole suite (as a shared database would be) and runs on the live
 * clock: every test passes its instants explicitly and never sleeps. Tests are independent: each
 * one creates its own tenants with fresh random ids, so no test sees another's data, even on a
 * database that keeps data between runs. The few global operations (claiming due work, purges,
 * the next due instant of the outbox) work at instants far in the past, drain whatever they find
 * there, assert only about their own rows, and retire those rows when they finish.
 */
export const storageConformance = <E>(name: string, storage: Layer.Layer<Storage, E>): void =>
  layer(completed(storage), { excludeTestServices: true, timeout: Duration.minutes(2) })(name, (it) => {
    transactorSuite(it)
    rollbackSuite(it)
    catalogSuite(it)
    directorySuite(it)
    memberSuite(it)
    streakSuite(it)
    achievementSuite(it)
    actionLogSuite(it)
    idempotencySuite(it)
    subscriptionSuite(it)
    outboxSuite(it)
    credentialSuite(it)
    oauthSuite(it)
    usageSuite(it)
    experimentSuite(it)
    batchSuite(it)
    ingestSuite(it)
    standingSuite(it)
    aggregatesSuite(it)
    rollupsSuite(it)
    proofSuite(it)
    accountsSuite(it)
    auditSuite(it)
    deliveriesLogSuite(it)
    importSuite(it)
  })
