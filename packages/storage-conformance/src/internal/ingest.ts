/**
 * Conformance of `IngestStore`, whether the adapter provides its own or gets it lifted from its
 * ports (`IngestStore.fromPorts`): what `load` reads and locks, claims held until the transaction
 * ends (a rolled-back claim is free again), and what `commit` writes.
 */
import { assert } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { StreakKey, StreakRow } from "@streaks/core/Domain"
import type { ProjectId, UserHash } from "@streaks/core/Ids"
import { IngestStore, type LoadRequest, noChanges } from "@streaks/core/IngestStore"
import {
  AchievementStore,
  ActionLog,
  ExperimentStore,
  IdempotencyStore,
  MemberStore,
  StreakStore,
  SubscriptionStore,
  Transactor,
  UsageStore
} from "@streaks/core/Ports"
import {
  achievementsOf,
  at,
  day,
  epoch,
  makeAchievement,
  makeAction,
  makeExperiment,
  makeMilestone,
  makeSubscription,
  makeUserHash,
  memberOf,
  randomHex,
  rowOf,
  seedTenant
} from "../Fixtures.js"
import { Boom, concurrently, type It, perOrigin, plain, SECOND } from "./kit.js"

const response = { status: 202, body: { ok: true, counted: true } }

const keyRequests = (projectId: ProjectId, keys: ReadonlyArray<string>) =>
  [...keys].sort().map((key) => ({ projectId, key, now: epoch }))

export const ingestSuite = (it: It) =>
  perOrigin(it, "ingest", "IngestStore", (it) => {
    it.effect("load resolves aliases and locks each asked key's row, created empty in its zone when missing, with achievements where asked", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const milestone = makeMilestone({ target: 1 })
        const { program, project } = yield* seedTenant({ program: { milestones: [milestone] } })
        const [member, anonymous, fresh] = [makeUserHash(), makeUserHash(), makeUserHash()]
        const members = yield* MemberStore
        yield* members.link(project.id, anonymous, member)
        yield* members.setTimezones([{ projectId: project.id, userHash: member, timezone: "Asia/Tokyo" }])
        const key = new StreakKey({ projectId: project.id, programId: program.id, userHash: member, ledger: "live" })
        yield* (yield* StreakStore).save([
          new StreakRow({
            ...key,
            lastActiveDay: day("2024-02-29"),
            run: 3,
            best: 5,
            timezone: "Asia/Tokyo",
            updatedAt: epoch
          })
        ])
        yield* (yield* AchievementStore).add([makeAchievement(key, milestone.id)])
        const streak = (userHash: UserHash, withAchieved: boolean) => ({
          projectId: project.id,
          userHash,
          streak: { programId: program.id, ledger: "live" as const, timezone: "Europe/Paris", withAchieved }
        })
        const request: LoadRequest = {
          members: [
            streak(anonymous, true),
            streak(fresh, false),
            { projectId: project.id, userHash: fresh },
            streak(member, false)
          ],
          keys: []
        }
        const snapshot = yield* (yield* Transactor).withTransaction(store.load(request))
        const [viaAlias, created, plainMember, direct] = snapshot.members
        assert.strictEqual(viaAlias!.member.userHash, member)
        assert.deepStrictEqual(Option.getOrUndefined(viaAlias!.member.timezone), "Asia/Tokyo")
        assert.strictEqual(viaAlias!.streak!.key.userHash, member, "the alias counts for its member")
        assert.strictEqual(viaAlias!.streak!.row.run, 3)
        assert.deepStrictEqual([...viaAlias!.streak!.achieved], [milestone.id])
        assert.deepStrictEqual(
          plain({ ...created!.streak!.row, updatedAt: undefined }),
          plain({ ...key, userHash: fresh, run: 0, best: 0, timezone: "Europe/Paris" })
        )
        assert.deepStrictEqual([...created!.streak!.achieved], [])
        assert.isUndefined(plainMember!.streak)
        assert.strictEqual(direct!.streak!.row.best, 5)
        assert.isTrue(
          Option.isNone(yield* rowOf(new StreakKey({ ...key, userHash: anonymous }))),
          "no row for the alias itself"
        )
      }))

    it.effect("audience answers each program's running experiment and the subscriptions that hear milestones", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tenant = yield* seedTenant()
        const quiet = yield* seedTenant()
        const hearing = makeSubscription(tenant, { eventTypes: ["milestone.achieved"] })
        yield* (yield* SubscriptionStore).create(hearing)
        yield* (yield* SubscriptionStore).create(makeSubscription(tenant, { eventTypes: ["streak.broken"] }))
        const experiment = makeExperiment(tenant.program)
        yield* (yield* ExperimentStore).start(experiment)
        const audience = yield* store.audience([tenant.program.id, quiet.program.id])
        assert.deepStrictEqual(audience.subscriptions.get(tenant.program.id)?.map((s) => s.id), [hearing.id])
        assert.deepStrictEqual(audience.subscriptions.get(quiet.program.id), [])
        assert.strictEqual(audience.experiments.get(tenant.program.id)?.id, experiment.id)
        assert.isFalse(audience.experiments.has(quiet.program.id))
      }))

    it.effect("load locks: 20 concurrent transactions that load, add 1 and commit the same keys lose no update", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const { program, project } = yield* seedTenant()
        const users = [makeUserHash(), makeUserHash(), makeUserHash()]
        const request = (order: ReadonlyArray<UserHash>): LoadRequest => ({
          members: order.map((userHash) => ({
            projectId: project.id,
            userHash,
            streak: { programId: program.id, ledger: "live" as const, timezone: "UTC", withAchieved: false }
          })),
          keys: []
        })
        yield* concurrently(20, (i) =>
          tx.withTransaction(Effect.gen(function*() {
            const snapshot = yield* store.load(request(i % 2 === 0 ? users : [...users].reverse()))
            const rows = snapshot.members.map((m) => new StreakRow({ ...m.streak!.row, run: m.streak!.row.run + 1 }))
            yield* store.commit({ ...noChanges, rows })
          })))
        for (const userHash of users) {
          const row = yield* rowOf(
            new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger: "live" })
          )
          assert.strictEqual(Option.getOrThrow(row).run, 20)
        }
      }))

    it.effect("load claims keys as claim does; an answer committed with them replays, a rolled-back claim is free again", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const idempotency = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const [done, kept, dropped, held] = ["done", "kept", "dropped", "held"].map((k) => `${k}-${randomHex(6)}`) as [
          string,
          string,
          string,
          string
        ]
        yield* idempotency.claim([{ projectId: project.id, key: done, now: epoch }])
        yield* idempotency.complete([{ projectId: project.id, key: done, response, now: epoch }])
        yield* idempotency.claim([{ projectId: project.id, key: held, now: epoch }])
        const keys = keyRequests(project.id, [done, kept, held])
        const snapshot = yield* tx.withTransaction(Effect.gen(function*() {
          const s = yield* store.load({ members: [], keys })
          yield* store.commit({ ...noChanges, answers: [{ projectId: project.id, key: kept, response, now: epoch }] })
          return s
        }))
        const tags = new Map(keys.map((k, i) => [k.key, snapshot.claims[i]!]))
        assert.deepStrictEqual(tags.get(done), { _tag: "Completed", response })
        assert.deepStrictEqual(tags.get(kept), { _tag: "Claimed" })
        assert.deepStrictEqual(tags.get(held), { _tag: "InProgress" })
        assert.deepStrictEqual(
          yield* idempotency.claim([{ projectId: project.id, key: kept, now: at(epoch, SECOND) }]),
          [{
            _tag: "Completed",
            response
          }]
        )
        const failed = yield* Effect.exit(tx.withTransaction(Effect.zipRight(
          store.load({ members: [], keys: keyRequests(project.id, [dropped]) }),
          Effect.fail(new Boom())
        )))
        assert.isTrue(Exit.isFailure(failed))
        assert.deepStrictEqual(
          yield* idempotency.claim([{ projectId: project.id, key: dropped, now: at(epoch, SECOND) }]),
          [{ _tag: "Claimed" }]
        )
      }))

    it.effect("of 10 concurrent transactions claiming the same keys, each key is Claimed exactly once", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const { project } = yield* seedTenant()
        const keys = keyRequests(project.id, Array.from({ length: 5 }, (_, i) => `k${i}-${randomHex(6)}`))
        const results = yield* concurrently(10, () =>
          tx.withTransaction(Effect.gen(function*() {
            const { claims } = yield* store.load({ members: [], keys })
            const answers = keys.flatMap((k, i) => (claims[i]!._tag === "Claimed" ? [{ ...k, response }] : []))
            yield* store.commit({ ...noChanges, answers })
            return claims
          })))
        for (let k = 0; k < keys.length; k++) {
          assert.deepStrictEqual(results.map((r) => r[k]!._tag).filter((tag) => tag === "Claimed"), ["Claimed"])
        }
      }))

    it.effect("history of many keys (a program's recomputation) answers each key's days ascending, in key order", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const streaks = yield* StreakStore
        const { program, project } = yield* seedTenant()
        const keys = Array.from({ length: 40 }, () =>
          new StreakKey({ projectId: project.id, programId: program.id, userHash: makeUserHash(), ledger: "live" }))
        // Key i has the days 2024-03-01 .. 03-(i % 5) added newest first; every fifth key has none.
        const expected = keys.map((_, i) =>
          Array.from({ length: i % 5 }, (_, d) => day(`2024-03-0${d + 1}`))
        )
        yield* streaks.addDays(keys.flatMap((key, i) => [...expected[i]!].reverse().map((d) => ({ key, day: d }))))
        assert.deepStrictEqual(yield* store.history(keys), expected)
        assert.deepStrictEqual(yield* store.history([...keys].reverse()), [...expected].reverse())
      }))

    it.effect("commit writes days, rows, achievements, usage, zones and actions; history answers the days ascending", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const milestone = makeMilestone({ target: 2 })
        const { program, project, workspace } = yield* seedTenant({ program: { milestones: [milestone] } })
        const userHash = makeUserHash()
        const key = new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger: "live" })
        const row = new StreakRow({
          ...key,
          lastActiveDay: day("2024-03-02"),
          run: 2,
          best: 2,
          timezone: "Europe/Paris",
          updatedAt: epoch
        })
        const action = makeAction(program, { userHash })
        const usage = { workspaceId: workspace.id, month: "2024-03", member: `${project.id}:${userHash}` }
        const achievement = makeAchievement(key, milestone.id)
        yield* tx.withTransaction(store.commit({
          ...noChanges,
          days: [{ key, day: day("2024-03-02") }, { key, day: day("2024-03-01") }],
          rows: [row],
          achievements: [achievement],
          usage: [usage],
          zones: [{ projectId: project.id, userHash, timezone: "Europe/Paris" }],
          actions: [action]
        }))
        assert.deepStrictEqual(yield* store.history([key]), [[day("2024-03-01"), day("2024-03-02")]])
        assert.deepStrictEqual(yield* store.history([]), [])
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(key))), plain(row))
        assert.deepStrictEqual((yield* achievementsOf(key)).map(plain), [plain(achievement)])
        assert.deepStrictEqual(yield* (yield* UsageStore).markActive([usage]), [false], "already marked")
        assert.deepStrictEqual(Option.getOrUndefined((yield* memberOf(project.id, userHash)).timezone), "Europe/Paris")
        const counts = yield* (yield* ActionLog).countsByDay({
          programIds: [program.id],
          from: at(epoch, -SECOND),
          to: at(epoch, SECOND),
          ledger: "live"
        })
        assert.strictEqual(counts.reduce((n, c) => n + c.count, 0), 1)
      }))

    it.effect("commit writes a row's policy fields and load reads them back; a row committed without them clears them", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const { program, project } = yield* seedTenant()
        const userHash = makeUserHash()
        const key = new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger: "live" })
        const row = new StreakRow({
          ...key,
          lastActiveDay: day("2024-03-06"),
          run: 3,
          best: 3,
          timezone: "UTC",
          periodDays: 2,
          freezes: 1,
          grants: [{ day: day("2024-03-01"), count: 1 }, { day: day("2024-03-04"), count: 2 }],
          frozenNotifiedThrough: day("2024-03-03"),
          updatedAt: epoch
        })
        yield* tx.withTransaction(store.commit({ ...noChanges, days: [{ key, day: day("2024-03-06") }], rows: [row] }))
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(key))), plain(row))
        const request: LoadRequest = {
          members: [{
            projectId: project.id,
            userHash,
            streak: { programId: program.id, ledger: "live", timezone: "UTC", withAchieved: true }
          }],
          keys: []
        }
        const loaded = yield* tx.withTransaction(store.load(request))
        assert.deepStrictEqual(plain(loaded.members[0]!.streak!.row), plain(row))
        const bare = new StreakRow({
          ...key,
          lastActiveDay: day("2024-03-07"),
          run: 1,
          best: 3,
          timezone: "UTC",
          updatedAt: epoch
        })
        yield* tx.withTransaction(store.commit({ ...noChanges, days: [{ key, day: day("2024-03-07") }], rows: [bare] }))
        // None of the earlier values stays; absent `periodDays` and `grants` may read as their defaults.
        const stored = Option.getOrThrow(yield* rowOf(key))
        assert.include([undefined, 1], stored.periodDays)
        assert.isUndefined(stored.freezes)
        assert.deepStrictEqual(stored.grants ?? [], [])
        assert.isUndefined(stored.frozenNotifiedThrough)
        assert.strictEqual(stored.lastActiveDay, day("2024-03-07"))
      }))

    it.effect("commit of an active day already recorded fails, and its transaction leaves nothing behind", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const { program, project } = yield* seedTenant()
        const key = new StreakKey({
          projectId: project.id,
          programId: program.id,
          userHash: makeUserHash(),
          ledger: "live"
        })
        yield* (yield* StreakStore).addDays([{ key, day: day("2024-03-01") }])
        const row = new StreakRow({
          ...key,
          lastActiveDay: day("2024-03-02"),
          run: 2,
          best: 2,
          timezone: "UTC",
          updatedAt: epoch
        })
        const exit = yield* Effect.exit(tx.withTransaction(store.commit({
          ...noChanges,
          days: [{ key, day: day("2024-03-02") }, { key, day: day("2024-03-01") }],
          rows: [row]
        })))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(yield* store.history([key]), [[day("2024-03-01")]])
        assert.isTrue(Option.isNone(yield* rowOf(key)))
      }))

    it.effect("commit of an achievement already recorded fails, and its transaction leaves nothing behind", () =>
      Effect.gen(function*() {
        const store = yield* IngestStore
        const tx = yield* Transactor
        const { program, project } = yield* seedTenant()
        const [m1, m2] = program.milestones
        const key = new StreakKey({
          projectId: project.id,
          programId: program.id,
          userHash: makeUserHash(),
          ledger: "live"
        })
        const first = makeAchievement(key, m1!.id)
        yield* (yield* AchievementStore).add([first])
        const exit = yield* Effect.exit(tx.withTransaction(store.commit({
          ...noChanges,
          days: [{ key, day: day("2024-03-07") }],
          achievements: [makeAchievement(key, m2!.id), makeAchievement(key, m1!.id, at(epoch, SECOND))]
        })))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual((yield* achievementsOf(key)).map(plain), [plain(first)])
        assert.deepStrictEqual(yield* store.history([key]), [[]])
      }))
  })
