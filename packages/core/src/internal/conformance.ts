/**
 * `storageConformance`: the one suite every storage adapter runs, so that all adapters keep the
 * MUST rules of `Ports.ts` (each port's suite lives in `conformance<Area>.ts`).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option } from "effect"
import * as IngestStore from "../IngestStore.js"
import {
  AchievementStore,
  ActionLog,
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
} from "../Ports.js"
import { batchSuite } from "./conformanceBatches.js"
import { actionLogSuite, idempotencySuite, outboxSuite, subscriptionSuite } from "./conformanceDelivery.js"
import {
  day,
  epoch,
  makeAction,
  makeExperiment,
  makeKey,
  makeMessage,
  makeProgram,
  makeSubscription,
  makeUserHash,
  randomHex,
  seedTenant
} from "./conformanceFixtures.js"
import { Boom, type It } from "./conformanceKit.js"
import { ingestSuite } from "./conformanceIngest.js"
import { standingSuite } from "./conformanceStanding.js"
import { achievementSuite, streakSuite, transactorSuite } from "./conformanceStreaks.js"
import { credentialSuite, directorySuite, experimentSuite, memberSuite, usageSuite } from "./conformanceTenancy.js"

const rollbackSuite = (it: It) =>
  describe("Transactor rollback", () => {
    it.effect("a failing unit of work leaves no row, day, achievement, action, usage mark, outbox message or other write behind", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
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
        const message = makeMessage(subscription, { nextAttemptAt: new Date("2100-01-01T00:00:00.000Z") })
        const newProgram = makeProgram(project.id, { eventKey: `rolled_back_${randomHex(4)}` })
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          yield* idempotency.claim(project.id, idemKey, epoch)
          yield* members.setTimezone(project.id, key.userHash, "Europe/Paris")
          yield* members.link(project.id, anon, key.userHash)
          yield* streaks.lock(key, "Europe/Paris")
          yield* streaks.addDay(key, day("2024-03-01"))
          yield* achievements.add(key, program.milestones[0]!.id, epoch)
          yield* log.append(action)
          yield* usage.markActive(workspace.id, "2024-03", key.userHash)
          yield* subscriptions.create(subscription)
          yield* outbox.enqueue([message])
          yield* experiments.start(makeExperiment(program))
          yield* directory.createProgram(newProgram)
          yield* directory.goLive(program.id)
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        assert.isTrue(Option.isNone(yield* streaks.get(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
        assert.deepStrictEqual(yield* streaks.keysOfMember(project.id, key.userHash), [])
        assert.deepStrictEqual(yield* achievements.list(key), [])
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
        assert.isTrue(Option.isNone(yield* outbox.get(message.id)))
        assert.isTrue(Option.isNone(yield* experiments.running(program.id)))
        assert.isTrue(Option.isNone(yield* directory.program(newProgram.id)))
        assert.strictEqual(Option.getOrThrow(yield* directory.program(program.id)).status, "test")
        const member = yield* members.lookup(project.id, anon)
        assert.strictEqual(member.userHash, anon)
        assert.isTrue(Option.isNone((yield* members.lookup(project.id, key.userHash)).timezone))
        assert.deepStrictEqual(yield* idempotency.claim(project.id, idemKey, epoch), { _tag: "Claimed" })
      }))
  })

/** The adapter's own `IngestStore` where its layer provides one, else `IngestStore.fromPorts`. */
const withIngestStore = (
  storage: Layer.Layer<Storage, unknown>
): Layer.Layer<Storage | IngestStore.IngestStore, unknown> =>
  Layer.flatMap(
    storage,
    (context) =>
      Option.isSome(
          Context.getOption(context as Context.Context<Storage | IngestStore.IngestStore>, IngestStore.IngestStore)
        )
        ? Layer.succeedContext(context as Context.Context<Storage | IngestStore.IngestStore>)
        : Layer.provideMerge(IngestStore.layerFromPorts, Layer.succeedContext(context))
  )

/**
 * Registers the conformance suite of a storage adapter under `name`.
 *
 * The layer is built once for the whole suite (as a shared database would be) and runs on the live
 * clock: every test passes its instants explicitly and never sleeps. Tests are independent: each
 * one creates its own tenants with fresh random ids, so no test sees another's data, even on a
 * database that keeps data between runs. The few global operations (claiming due work, purges,
 * `nextDueAt`) work at instants far in the past, drain whatever they find there, assert only about
 * their own rows, and retire those rows when they finish.
 */
export const storageConformance = (name: string, storage: Layer.Layer<Storage, unknown>): void =>
  layer(withIngestStore(storage), { excludeTestServices: true, timeout: Duration.minutes(2) })(name, (it) => {
    transactorSuite(it)
    rollbackSuite(it)
    directorySuite(it)
    memberSuite(it)
    streakSuite(it)
    achievementSuite(it)
    actionLogSuite(it)
    idempotencySuite(it)
    subscriptionSuite(it)
    outboxSuite(it)
    credentialSuite(it)
    usageSuite(it)
    experimentSuite(it)
    batchSuite(it)
    ingestSuite(it)
    standingSuite(it)
  })
