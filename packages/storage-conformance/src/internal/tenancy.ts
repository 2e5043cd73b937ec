/**
 * Conformance of the tenant ports: the catalog itself (insert, find, update, remove and its
 * uniqueness rules), and on it the directory (workspaces, projects, programs, going live),
 * credential and experiment stores core builds; members (zones, aliases) and usage.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { ApiKey, Program, ProgramSettings } from "@streaks/core/Domain"
import * as Policy from "@streaks/core/Policy"
import {
  Catalog,
  type CatalogKind,
  type CatalogRecords,
  catalogSchemas,
  CredentialStore,
  DirectoryStore,
  ExperimentStore,
  MemberStore,
  type Selection,
  Transactor,
  UsageStore
} from "@streaks/core/Ports"
import {
  at,
  epoch,
  freshId,
  makeApiKey,
  makeExperiment,
  makeGrant,
  makeMilestone,
  makeProgram,
  makeProject,
  makeSubscription,
  makeUserHash,
  makeWorkspace,
  memberOf,
  randomHex,
  seedProgram,
  seedTenant
} from "../Fixtures.js"
import { Boom, concurrently, countTrue, DAY, HOUR, type It, plain } from "./kit.js"

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id).sort()

/** A program's policy as its JSON (`undefined` without one), and the program's mode. */
const countingOf = (program: Program) => ({
  mode: program.mode,
  policy: program.policy === undefined ? undefined : Policy.toJson(program.policy)
})

/** A record as its domain schema encodes it, with undefined fields dropped: what a round trip must keep. */
const encoded = <K extends CatalogKind>(kind: K, record: CatalogRecords[K]): unknown =>
  withoutUndefined(Schema.encodeSync(schemas[kind])(record))

const schemas = catalogSchemas

const withoutUndefined = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutUndefined)
    : typeof value === "object" && value !== null && !(value instanceof Date)
    ? Object.fromEntries(
      Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, withoutUndefined(v)])
    )
    : value

/** Ids in the order `find`, `update` and `remove` answer: ascending by code unit. */
const inIdOrder = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id).sort()
const idsOf = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

/** An instant no other test uses, so a selection by it alone sees this test's records only. */
const uniqueInstant = () => new Date(Date.UTC(2030, 0, 1) + Number.parseInt(randomHex(4), 16))

/** Stores `record` (asserting that it was stored) and returns it. */
const inserted = <K extends CatalogKind>(kind: K, record: CatalogRecords[K]) =>
  Effect.gen(function*() {
    assert.isTrue(yield* (yield* Catalog).insert(kind, record), `insert of a ${kind}`)
    return record
  })

/** Asserts that `find` by id gives exactly `record`, as its domain class. */
const assertStored = <K extends CatalogKind>(kind: K, record: CatalogRecords[K]) =>
  Effect.gen(function*() {
    const found = yield* (yield* Catalog).find(kind, { id: record.id } as unknown as Selection<K>)
    assert.strictEqual(found.length, 1, `one ${kind} ${record.id}`)
    assert.instanceOf(found[0], schemas[kind] as unknown as new(...args: never) => unknown)
    assert.deepStrictEqual(encoded(kind, found[0]!), encoded(kind, record))
  })

export const catalogSuite = (it: It) =>
  describe("Catalog", () => {
    it.effect("insert stores every field of each kind exactly (absent optional fields stay absent); find by id gives it back as its domain class", () =>
      Effect.gen(function*() {
        const workspace = yield* inserted("workspace", makeWorkspace({ name: "Åcme “round trip” 🚀", plan: "scale" }))
        const other = yield* inserted("workspace", makeWorkspace({ plan: "pro" }))
        const project = yield* inserted(
          "project",
          makeProject(workspace.id, {
            allowedOrigins: ["https://a.example.com", "https://*.example.org", "http://localhost:5173"],
            timezone: "Asia/Kolkata",
            browserCounting: "display-only",
            legacyNoOriginIngest: true
          })
        )
        const bare = yield* inserted("project", makeProject(workspace.id, { allowedOrigins: [] }))
        const policy = Schema.decodeSync(Policy.Policy)({
          cadence: "weekly",
          target: 3,
          dayStartHour: 4,
          freezes: { initial: 1, max: 3, earnEvery: 2 },
          atRiskHour: 20
        })
        const program = yield* inserted(
          "program",
          makeProgram(project.id, {
            name: "Lessons ✓",
            eventKey: "Lesson Completed",
            status: "live",
            mode: "weekly",
            policy,
            milestones: [
              makeMilestone({ target: 1, msg: "First!", rewardType: "message" }),
              makeMilestone({ target: 5, msg: "Five", rewardType: "message", rewardValue: "" }),
              makeMilestone({ target: 30, msg: "Month", rewardType: "link", rewardValue: "https://example.com/gift" })
            ],
            settings: new ProgramSettings({ theme: { name: "dark" }, position: "top-left", mainMessage: "Go on ⚡" })
          })
        )
        const plainProgram = yield* inserted("program", makeProgram(bare.id, { milestones: [] }))
        const tenant = { workspace, project, program }
        const subscription = yield* inserted(
          "subscription",
          makeSubscription(tenant, {
            eventTypes: ["streak.broken", "milestone.achieved"],
            createdBy: { type: "oauth", id: freshId("OAuthGrantId") }
          })
        )
        const revokedKey = yield* inserted(
          "apiKey",
          makeApiKey(workspace.id, { name: "CI key", revokedAt: at(epoch, DAY) })
        )
        const key = yield* inserted("apiKey", makeApiKey(workspace.id))
        const grant = yield* inserted(
          "grant",
          makeGrant([other.id, workspace.id], { revokedAt: at(epoch, HOUR) })
        )
        const token = yield* inserted(
          "grant",
          makeGrant([workspace.id], { id: freshId("McpTokenId"), appName: "Support agent" })
        )
        const ended = yield* inserted(
          "experiment",
          makeExperiment(program, { holdoutPercent: 50, startedAt: epoch, endedAt: at(epoch, 7 * DAY) })
        )
        const running = yield* inserted("experiment", makeExperiment(program, { startedAt: at(epoch, 8 * DAY) }))

        yield* assertStored("workspace", workspace)
        yield* assertStored("workspace", other)
        yield* assertStored("project", project)
        yield* assertStored("project", bare)
        yield* assertStored("program", program)
        yield* assertStored("program", plainProgram)
        yield* assertStored("subscription", subscription)
        yield* assertStored("apiKey", revokedKey)
        yield* assertStored("apiKey", key)
        yield* assertStored("grant", grant)
        yield* assertStored("grant", token)
        yield* assertStored("experiment", ended)
        yield* assertStored("experiment", running)
        // Services hand the policy to Schema-based code: it comes back as the Policy class.
        const [stored] = yield* (yield* Catalog).find("program", { id: program.id })
        assert.instanceOf(stored!.policy, Policy.Policy)
      }))

    it.effect("insert refuses (false, storing nothing) a record whose id exists, in every kind, also under other parents", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const subscription = yield* inserted("subscription", makeSubscription(a))
        const key = yield* inserted("apiKey", makeApiKey(a.workspace.id))
        const grant = yield* inserted("grant", makeGrant([a.workspace.id]))
        const experiment = yield* inserted("experiment", makeExperiment(a.program))

        assert.isFalse(yield* catalog.insert("workspace", makeWorkspace({ id: a.workspace.id, name: "Other" })))
        assert.isFalse(yield* catalog.insert("project", makeProject(b.workspace.id, { id: a.project.id })))
        assert.isFalse(yield* catalog.insert("program", makeProgram(b.project.id, { id: a.program.id })))
        assert.isFalse(yield* catalog.insert("subscription", makeSubscription(b, { id: subscription.id })))
        assert.isFalse(yield* catalog.insert("apiKey", makeApiKey(b.workspace.id, { id: key.id })))
        assert.isFalse(yield* catalog.insert("grant", makeGrant([b.workspace.id], { id: grant.id })))
        assert.isFalse(yield* catalog.insert("experiment", makeExperiment(b.program, { id: experiment.id })))

        yield* assertStored("workspace", a.workspace)
        yield* assertStored("project", a.project)
        yield* assertStored("program", a.program)
        yield* assertStored("subscription", subscription)
        yield* assertStored("apiKey", key)
        yield* assertStored("grant", grant)
        yield* assertStored("experiment", experiment)
        // The refused experiment did not start one on the other program either.
        assert.deepStrictEqual(yield* catalog.find("experiment", { programId: b.program.id }), [])
      }))

    it.effect("insert refuses a project whose siteKey another project holds, in any workspace", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const taken = makeProject(b.workspace.id, { siteKey: a.project.siteKey })
        assert.isFalse(yield* catalog.insert("project", taken))
        assert.deepStrictEqual(yield* catalog.find("project", { id: taken.id }), [])
        assert.deepStrictEqual(idsOf(yield* catalog.find("project", { siteKey: a.project.siteKey })), [a.project.id])
        assert.isTrue(yield* catalog.insert("project", makeProject(b.workspace.id)))
      }))

    it.effect("insert refuses a second experiment without endedAt for a program; an ended one, or one of another program, is stored", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const running = yield* inserted("experiment", makeExperiment(tenant.program))
        const second = makeExperiment(tenant.program, { holdoutPercent: 30 })
        assert.isFalse(yield* catalog.insert("experiment", second))
        assert.deepStrictEqual(yield* catalog.find("experiment", { id: second.id }), [])
        yield* inserted("experiment", makeExperiment(tenant.program, { endedAt: at(epoch, DAY) }))
        yield* inserted("experiment", makeExperiment(other))
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("experiment", { programId: tenant.program.id, endedAt: null })),
          [running.id]
        )
        // Once it has ended, another may start.
        yield* catalog.update("experiment", { id: running.id }, { endedAt: at(epoch, 2 * DAY) })
        assert.isTrue(yield* catalog.insert("experiment", second))
      }))

    it.effect("of 20 concurrent inserts of a running experiment for one program exactly one is stored", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const { program } = yield* seedTenant()
        const candidates = Array.from({ length: 20 }, () => makeExperiment(program))
        const results = yield* concurrently(20, (i) => catalog.insert("experiment", candidates[i]!))
        assert.strictEqual(countTrue(results), 1)
        const winner = candidates[results.indexOf(true)]!
        assert.deepStrictEqual(idsOf(yield* catalog.find("experiment", { programId: program.id })), [winner.id])
      }))

    it.effect("find selects workspaces, projects and programs by each of their fields, in id order", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const [w1, w2] = [makeWorkspace(), makeWorkspace()]
        yield* inserted("workspace", w1)
        yield* inserted("workspace", w2)
        // Inserted against id order, so that an answer in insertion order shows.
        const projects = [makeProject(w1.id), makeProject(w1.id), makeProject(w1.id)]
        for (const p of [...projects].sort((x, y) => (x.id < y.id ? 1 : -1))) yield* inserted("project", p)
        const project = projects[0]!
        const eventKey = `key_${randomHex(4)}`
        const programs = [
          makeProgram(project.id, { eventKey, status: "live" }),
          makeProgram(project.id, { eventKey: `${eventKey}_b`, status: "test" }),
          makeProgram(project.id, { eventKey: `${eventKey}_c`, status: "live" }),
          makeProgram(projects[1]!.id, { eventKey, status: "test" })
        ]
        for (const p of [...programs].reverse()) yield* inserted("program", p)

        assert.deepStrictEqual(idsOf(yield* catalog.find("workspace", { id: w2.id })), [w2.id])
        assert.deepStrictEqual(idsOf(yield* catalog.find("project", { id: project.id })), [project.id])
        assert.deepStrictEqual(idsOf(yield* catalog.find("project", { siteKey: projects[2]!.siteKey })), [
          projects[2]!.id
        ])
        assert.deepStrictEqual(idsOf(yield* catalog.find("project", { workspaceId: w1.id })), inIdOrder(projects))
        assert.deepStrictEqual(yield* catalog.find("project", { workspaceId: w2.id }), [])
        assert.deepStrictEqual(idsOf(yield* catalog.find("program", { id: programs[1]!.id })), [programs[1]!.id])
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("program", { projectId: project.id })),
          inIdOrder(programs.slice(0, 3))
        )
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("program", { eventKey })),
          inIdOrder([programs[0]!, programs[3]!])
        )
        assert.deepStrictEqual(idsOf(yield* catalog.find("program", { projectId: project.id, eventKey })), [
          programs[0]!.id
        ])
        // The event key matches exactly: case and spaces count.
        assert.deepStrictEqual(yield* catalog.find("program", { eventKey: eventKey.toUpperCase() }), [])
        assert.deepStrictEqual(yield* catalog.find("program", { eventKey: `${eventKey} ` }), [])
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("program", { projectId: project.id, status: "live" })),
          inIdOrder([programs[0]!, programs[2]!])
        )
      }))

    it.effect("find selects subscriptions, credentials and experiments by each of their fields, Dates by their instant", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const a = yield* seedTenant()
        const b = { ...a, program: yield* seedProgram(a) }
        const c = yield* seedTenant()
        const subscriptions = [makeSubscription(a), makeSubscription(a), makeSubscription(b), makeSubscription(c)]
        for (const s of subscriptions) yield* inserted("subscription", s)
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("subscription", { programId: a.program.id })),
          inIdOrder(subscriptions.slice(0, 2))
        )
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("subscription", { workspaceId: a.workspace.id })),
          inIdOrder(subscriptions.slice(0, 3))
        )
        assert.deepStrictEqual(idsOf(yield* catalog.find("subscription", { id: subscriptions[3]!.id })), [
          subscriptions[3]!.id
        ])

        const revokedAt = uniqueInstant()
        const keys = [
          makeApiKey(a.workspace.id),
          makeApiKey(a.workspace.id, { revokedAt }),
          makeApiKey(a.workspace.id, { revokedAt: at(revokedAt, 1) })
        ]
        for (const k of keys) yield* inserted("apiKey", k)
        const keyIds = keys.map((k) => k.id)
        assert.deepStrictEqual(idsOf(yield* catalog.find("apiKey", { tokenHash: keys[1]!.tokenHash })), [keys[1]!.id])
        assert.deepStrictEqual(idsOf(yield* catalog.find("apiKey", { id: keys[2]!.id })), [keys[2]!.id])
        // A Date matches the same instant, whatever object holds it, and only that instant.
        assert.deepStrictEqual(idsOf(yield* catalog.find("apiKey", { revokedAt: new Date(revokedAt.getTime()) })), [
          keys[1]!.id
        ])
        assert.deepStrictEqual(idsOf(yield* catalog.find("apiKey", { id: keyIds, revokedAt: null })), [keys[0]!.id])

        const grants = [
          makeGrant([a.workspace.id]),
          makeGrant([a.workspace.id], { revokedAt: at(revokedAt, 2) }),
          makeGrant([a.workspace.id], { id: freshId("McpTokenId") })
        ]
        for (const g of grants) yield* inserted("grant", g)
        const grantIds = grants.map((g) => g.id)
        assert.deepStrictEqual(idsOf(yield* catalog.find("grant", { tokenHash: grants[2]!.tokenHash })), [
          grants[2]!.id
        ])
        assert.deepStrictEqual(idsOf(yield* catalog.find("grant", { id: grants[0]!.id })), [grants[0]!.id])
        assert.deepStrictEqual(idsOf(yield* catalog.find("grant", { revokedAt: at(revokedAt, 2) })), [grants[1]!.id])
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("grant", { id: grantIds, revokedAt: null })),
          inIdOrder([grants[0]!, grants[2]!])
        )

        const endedAt = at(revokedAt, 3)
        const experiments = [
          makeExperiment(a.program, { endedAt }),
          makeExperiment(a.program, { endedAt: at(endedAt, DAY) }),
          makeExperiment(a.program),
          makeExperiment(b.program)
        ]
        for (const e of experiments) yield* inserted("experiment", e)
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("experiment", { programId: a.program.id })),
          inIdOrder(experiments.slice(0, 3))
        )
        assert.deepStrictEqual(idsOf(yield* catalog.find("experiment", { programId: a.program.id, endedAt: null })), [
          experiments[2]!.id
        ])
        assert.deepStrictEqual(idsOf(yield* catalog.find("experiment", { endedAt })), [experiments[0]!.id])
        assert.deepStrictEqual(idsOf(yield* catalog.find("experiment", { id: experiments[3]!.id })), [
          experiments[3]!.id
        ])
      }))

    it.effect("find by an array matches any of its values, an empty array nothing; every field named must match", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const a = yield* seedTenant()
        const a2 = yield* seedProgram(a, { status: "live" })
        const b = yield* seedTenant()
        const c = yield* seedTenant()
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("workspace", { id: [c.workspace.id, a.workspace.id, freshId("WorkspaceId")] })),
          inIdOrder([a.workspace, c.workspace])
        )
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("project", { workspaceId: [a.workspace.id, b.workspace.id] })),
          inIdOrder([a.project, b.project])
        )
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("program", { projectId: [a.project.id, b.project.id, c.project.id] })),
          inIdOrder([a.program, a2, b.program, c.program])
        )
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("program", { projectId: [a.project.id, b.project.id], status: ["live"] })),
          [a2.id]
        )
        assert.deepStrictEqual(
          idsOf(yield* catalog.find("program", { projectId: a.project.id, status: ["test", "live"] })),
          inIdOrder([a.program, a2])
        )
        // A value given twice selects its record once.
        assert.deepStrictEqual(idsOf(yield* catalog.find("workspace", { id: [a.workspace.id, a.workspace.id] })), [
          a.workspace.id
        ])
        assert.deepStrictEqual(yield* catalog.find("workspace", { id: [] }), [])
        assert.deepStrictEqual(yield* catalog.find("program", { projectId: a.project.id, status: [] }), [])
        assert.deepStrictEqual(yield* catalog.find("program", { projectId: [], status: "live" }), [])
        assert.deepStrictEqual(
          yield* catalog.find("program", { projectId: a.project.id, status: "live", id: b.program.id }),
          []
        )
      }))

    it.effect("update sets the changes on the selected records and returns them as updated, in id order; the rest is kept", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const tenant = yield* seedTenant()
        const programs = [tenant.program, yield* seedProgram(tenant), yield* seedProgram(tenant, { status: "live" })]
        const updated = yield* catalog.update("program", { projectId: tenant.project.id, status: "test" }, {
          status: "live"
        })
        const expected = inIdOrder(programs.slice(0, 2)).map((id) =>
          new Program({ ...programs.find((p) => p.id === id)!, status: "live" })
        )
        assert.deepStrictEqual(updated.map((p) => encoded("program", p)), expected.map((p) => encoded("program", p)))
        for (const p of expected) yield* assertStored("program", p)
        yield* assertStored("program", programs[2]!)
        assert.deepStrictEqual(
          yield* catalog.update("program", { projectId: tenant.project.id, status: "test" }, { status: "live" }),
          []
        )
        assert.deepStrictEqual(yield* catalog.update("program", { id: freshId("ProgramId") }, { status: "test" }), [])

        // Several fields at once, a nested one among them.
        const policy = Schema.decodeSync(Policy.Policy)({ cadence: "monthly", target: 10 })
        const [withPolicy] = yield* catalog.update("program", { id: programs[2]!.id }, {
          policy,
          mode: "monthly",
          webhookSecretHash: "f".repeat(64)
        })
        const policed = new Program({ ...programs[2]!, policy, mode: "monthly", webhookSecretHash: "f".repeat(64) })
        assert.deepStrictEqual(encoded("program", withPolicy!), encoded("program", policed))
        yield* assertStored("program", policed)

        // An absent field given a value: a revocation.
        const key = yield* inserted("apiKey", makeApiKey(tenant.workspace.id))
        const revokedAt = at(epoch, DAY)
        const [revoked] = yield* catalog.update("apiKey", { id: key.id, revokedAt: null }, { revokedAt })
        assert.deepStrictEqual(encoded("apiKey", revoked!), encoded("apiKey", new ApiKey({ ...key, revokedAt })))
        assert.deepStrictEqual(yield* catalog.update("apiKey", { id: key.id, revokedAt: null }, { revokedAt }), [])
        yield* assertStored("apiKey", new ApiKey({ ...key, revokedAt }))
      }))

    it.effect("of 20 concurrent conditional updates ({ id, status: \"test\" } → live) exactly one changes the record", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const { program } = yield* seedTenant()
        const results = yield* concurrently(
          20,
          () => catalog.update("program", { id: program.id, status: "test" }, { status: "live" })
        )
        assert.strictEqual(results.filter((changed) => changed.length === 1).length, 1)
        assert.isTrue(results.every((changed) => changed.length <= 1))
        yield* assertStored("program", new Program({ ...program, status: "live" }))
      }))

    it.effect("remove deletes the selected records and returns them, in id order; nothing selected gives []", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const tenant = yield* seedTenant()
        const kept = makeSubscription(tenant)
        const removed = [
          makeSubscription(tenant, { createdBy: { type: "oauth", id: "oag_x" } }),
          makeSubscription(tenant),
          makeSubscription(tenant)
        ]
        for (const s of [...removed, kept]) yield* inserted("subscription", s)
        const ids = removed.map((s) => s.id)
        const answer = yield* catalog.remove("subscription", { id: ids })
        assert.deepStrictEqual(idsOf(answer), inIdOrder(removed))
        for (const s of answer) {
          assert.deepStrictEqual(
            encoded("subscription", s),
            encoded("subscription", removed.find((r) => r.id === s.id)!)
          )
        }
        assert.deepStrictEqual(yield* catalog.find("subscription", { id: ids }), [])
        assert.deepStrictEqual(yield* catalog.remove("subscription", { id: ids }), [])
        yield* assertStored("subscription", kept)
        const experiment = yield* inserted("experiment", makeExperiment(tenant.program))
        assert.deepStrictEqual(
          idsOf(yield* catalog.remove("experiment", { programId: tenant.program.id, endedAt: null })),
          [experiment.id]
        )
        assert.deepStrictEqual(yield* catalog.find("experiment", { id: experiment.id }), [])
      }))

    it.effect("a failed transaction undoes the catalog's inserts, updates and removes", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const catalog = yield* Catalog
        const tenant = yield* seedTenant()
        const subscription = yield* inserted("subscription", makeSubscription(tenant))
        const workspace = makeWorkspace()
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          assert.isTrue(yield* catalog.insert("workspace", workspace))
          assert.strictEqual(
            (yield* catalog.update("program", { id: tenant.program.id }, { status: "live" })).length,
            1
          )
          assert.strictEqual((yield* catalog.remove("subscription", { id: subscription.id })).length, 1)
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        assert.deepStrictEqual(yield* catalog.find("workspace", { id: workspace.id }), [])
        yield* assertStored("program", tenant.program)
        yield* assertStored("subscription", subscription)
      }))
  })

export const directorySuite = (it: It) =>
  describe("DirectoryStore", () => {
    it.effect("createWorkspace then workspace returns it; setPlan changes the plan; unknown ids give None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const workspace = makeWorkspace({ name: "Acme", plan: "growth" })
        yield* directory.createWorkspace(workspace)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* directory.workspace(workspace.id))), plain(workspace))
        const updated = yield* directory.setPlan(workspace.id, "pro")
        assert.strictEqual(Option.getOrThrow(updated).plan, "pro")
        assert.strictEqual(Option.getOrThrow(yield* directory.workspace(workspace.id)).plan, "pro")
        assert.isTrue(Option.isNone(yield* directory.workspace(freshId("WorkspaceId"))))
        assert.isTrue(Option.isNone(yield* directory.setPlan(freshId("WorkspaceId"), "scale")))
      }))

    it.effect("a project is found by id and by siteKey; unknown ones give None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const workspace = makeWorkspace()
        const project = makeProject(workspace.id, {
          allowedOrigins: ["https://a.example.com", "https://*.example.org", "http://localhost:5173"],
          timezone: "Europe/Berlin",
          browserCounting: "display-only",
          legacyNoOriginIngest: true
        })
        yield* directory.createWorkspace(workspace)
        yield* directory.createProject(project)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* directory.project(project.id))), plain(project))
        assert.deepStrictEqual(
          plain(Option.getOrThrow(yield* directory.projectBySiteKey(project.siteKey))),
          plain(project)
        )
        assert.isTrue(Option.isNone(yield* directory.project(freshId("ProjectId"))))
        assert.isTrue(Option.isNone(yield* directory.projectBySiteKey(freshId("SiteKey"))))
      }))

    it.effect("projectsOfWorkspaces returns exactly the projects of the given workspaces", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const [w1, w2, w3] = [makeWorkspace(), makeWorkspace(), makeWorkspace()]
        const projects = [makeProject(w1.id), makeProject(w1.id), makeProject(w2.id), makeProject(w3.id)]
        for (const w of [w1, w2, w3]) yield* directory.createWorkspace(w)
        for (const p of projects) yield* directory.createProject(p)
        assert.deepStrictEqual(ids(yield* directory.projectsOfWorkspaces([w1.id, w2.id])), ids(projects.slice(0, 3)))
        assert.deepStrictEqual(ids(yield* directory.projectsOfWorkspaces([w3.id])), ids(projects.slice(3)))
        assert.deepStrictEqual(yield* directory.projectsOfWorkspaces([]), [])
      }))

    it.effect("createProgram keeps milestones (with and without reward values) and settings", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const { project } = yield* seedTenant()
        const program = makeProgram(project.id, {
          milestones: [
            makeMilestone({ target: 1, msg: "First!", rewardType: "message" }),
            makeMilestone({ target: 5, msg: "Five", rewardType: "message", rewardValue: "Well done" }),
            makeMilestone({ target: 30, msg: "Month", rewardType: "link", rewardValue: "https://example.com/gift" })
          ]
        })
        yield* directory.createProgram(program)
        const stored = Option.getOrThrow(yield* directory.program(program.id))
        assert.deepStrictEqual(stored.milestones.map(plain), program.milestones.map(plain))
        assert.deepStrictEqual(plain(stored.settings), plain(program.settings))
        const { milestones: _m, settings: _s, ...rest } = plain(stored)
        const { milestones: _m2, settings: _s2, ...expected } = plain(program)
        assert.deepStrictEqual(rest, expected)
        assert.isTrue(Option.isNone(yield* directory.program(freshId("ProgramId"))))
      }))

    it.effect("programByEventKey matches the exact, case-sensitive event key within the project only", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const tenant = yield* seedTenant({ program: { eventKey: "lesson_completed" } })
        const other = yield* seedTenant({ program: { eventKey: "workout_done" } })
        const found = yield* directory.programByEventKey(tenant.project.id, "lesson_completed")
        assert.strictEqual(Option.getOrThrow(found).id, tenant.program.id)
        assert.isTrue(Option.isNone(yield* directory.programByEventKey(tenant.project.id, "Lesson_Completed")))
        assert.isTrue(Option.isNone(yield* directory.programByEventKey(tenant.project.id, "lesson_completed ")))
        assert.isTrue(Option.isNone(yield* directory.programByEventKey(tenant.project.id, "workout_done")))
        assert.strictEqual(
          Option.getOrThrow(yield* directory.programByEventKey(other.project.id, "workout_done")).id,
          other.program.id
        )
      }))

    it.effect("programsOfProjects returns exactly the programs of the given projects", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const a = yield* seedTenant()
        const a2 = yield* seedProgram(a)
        const b = yield* seedTenant()
        const c = yield* seedTenant()
        assert.deepStrictEqual(
          ids(yield* directory.programsOfProjects([a.project.id, b.project.id])),
          ids([a.program, a2, b.program])
        )
        assert.deepStrictEqual(ids(yield* directory.programsOfProjects([c.project.id])), [c.program.id])
        assert.deepStrictEqual(yield* directory.programsOfProjects([]), [])
      }))

    it.effect("setProgramStatus and setWebhookSecretHash update the program; unknown ids give None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const { program } = yield* seedTenant()
        assert.strictEqual(Option.getOrThrow(yield* directory.setProgramStatus(program.id, "live")).status, "live")
        assert.strictEqual(Option.getOrThrow(yield* directory.program(program.id)).status, "live")
        assert.strictEqual(Option.getOrThrow(yield* directory.setProgramStatus(program.id, "test")).status, "test")
        const rotated = yield* directory.setWebhookSecretHash(program.id, "f".repeat(64))
        assert.strictEqual(Option.getOrThrow(rotated).webhookSecretHash, "f".repeat(64))
        const stored = Option.getOrThrow(yield* directory.program(program.id))
        assert.strictEqual(stored.webhookSecretHash, "f".repeat(64))
        assert.strictEqual(stored.status, "test")
        assert.isTrue(Option.isNone(yield* directory.setProgramStatus(freshId("ProgramId"), "live")))
        assert.isTrue(Option.isNone(yield* directory.setWebhookSecretHash(freshId("ProgramId"), "0".repeat(64))))
      }))

    it.effect("a program's policy and mode round-trip through program, programByEventKey and programsOfProjects; without one it has none", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const tenant = yield* seedTenant()
        const policy = Schema.decodeSync(Policy.Policy)({
          cadence: "weekly",
          target: 3,
          dayStartHour: 4,
          freezes: { initial: 1, max: 3, earnEvery: 2 },
          atRiskHour: 20
        })
        const weekly = yield* seedProgram(tenant, { policy, mode: "weekly" })
        const expected = { mode: "weekly" as const, policy: Policy.toJson(policy) }
        const stored = Option.getOrThrow(yield* directory.program(weekly.id))
        assert.deepStrictEqual(countingOf(stored), expected)
        // Services hand the policy to Schema-based code: it comes back as the Policy class.
        assert.instanceOf(stored.policy, Policy.Policy)
        assert.deepStrictEqual(
          countingOf(Option.getOrThrow(yield* directory.programByEventKey(tenant.project.id, weekly.eventKey))),
          expected
        )
        const listed = yield* directory.programsOfProjects([tenant.project.id])
        assert.deepStrictEqual(countingOf(listed.find((p) => p.id === weekly.id)!), expected)
        assert.deepStrictEqual(countingOf(listed.find((p) => p.id === tenant.program.id)!), {
          mode: "continuous",
          policy: undefined
        })
      }))

    it.effect("setProgramPolicy replaces the policy and the mode and keeps the rest; an unknown id gives None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const { program } = yield* seedTenant()
        const monthly = Schema.decodeSync(Policy.Policy)({ cadence: "monthly", target: 10 })
        const updated = Option.getOrThrow(yield* directory.setProgramPolicy(program.id, monthly, "monthly"))
        assert.deepStrictEqual(countingOf(updated), { mode: "monthly", policy: Policy.toJson(monthly) })
        const stored = Option.getOrThrow(yield* directory.program(program.id))
        assert.deepStrictEqual(countingOf(stored), { mode: "monthly", policy: Policy.toJson(monthly) })
        const { mode: _m, policy: _p, ...rest } = plain(stored)
        const { mode: _m2, policy: _p2, ...unchanged } = plain(program)
        assert.deepStrictEqual(
          { ...rest, milestones: stored.milestones.map(plain), settings: plain(stored.settings) },
          { ...unchanged, milestones: program.milestones.map(plain), settings: plain(program.settings) }
        )
        // Rest days in the order given; a daily policy gives the mode "continuous" back.
        const daily = Schema.decodeSync(Policy.Policy)({ restDays: [7, 6], freezes: { initial: 2, max: 2 } })
        yield* directory.setProgramPolicy(program.id, daily, "continuous")
        assert.deepStrictEqual(countingOf(Option.getOrThrow(yield* directory.program(program.id))), {
          mode: "continuous",
          policy: Policy.toJson(daily)
        })
        assert.isTrue(Option.isNone(yield* directory.setProgramPolicy(freshId("ProgramId"), monthly, "monthly")))
      }))

    it.effect("changeProgramOutages adds, replaces by id and removes outage windows (instants to the millisecond, in order) and keeps the rest; an unknown id gives None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const { program } = yield* seedTenant()
        assert.isUndefined(Option.getOrThrow(yield* directory.program(program.id)).outages)
        const outages = [
          {
            id: "out_b",
            start: new Date("2024-03-04T10:00:00.123Z"),
            end: new Date("2024-03-04T14:00:00.000Z"),
            reason: "database down — «ünïcode»",
            restored: 10_000,
            createdAt: new Date("2024-03-05T12:00:00.000Z")
          },
          {
            id: "out_a",
            start: new Date("2024-03-01T00:00:00.000Z"),
            end: new Date("2024-03-02T00:00:00.000Z"),
            reason: "deploy",
            restored: 0,
            createdAt: new Date("2024-03-05T13:00:00.000Z")
          }
        ]
        const updated = Option.getOrThrow(yield* directory.changeProgramOutages(program.id, { add: outages }))
        assert.deepStrictEqual(updated.outages, outages)
        const stored = Option.getOrThrow(yield* directory.program(program.id))
        assert.deepStrictEqual(stored.outages, outages)
        assert.deepStrictEqual(
          (yield* directory.programsOfProjects([program.projectId])).find((p) => p.id === program.id)?.outages,
          outages
        )
        const { outages: _o, outagesRevision: _r, ...rest } = plain(stored)
        const { outages: _o2, outagesRevision: _r2, ...unchanged } = plain(program)
        assert.deepStrictEqual(
          { ...rest, milestones: stored.milestones.map(plain), settings: plain(stored.settings) },
          { ...unchanged, milestones: program.milestones.map(plain), settings: plain(program.settings) }
        )
        // A window of the same id is replaced where it stands; a new one comes last.
        const counted = { ...outages[0]!, restored: 7 }
        const later = { ...outages[1]!, id: "out_c", reason: "later" }
        yield* directory.changeProgramOutages(program.id, { add: [counted, later] })
        assert.deepStrictEqual(Option.getOrThrow(yield* directory.program(program.id)).outages, [
          counted,
          outages[1]!,
          later
        ])
        yield* directory.changeProgramOutages(program.id, { remove: ["out_b", "out_c", "out_unknown"] })
        assert.deepStrictEqual(Option.getOrThrow(yield* directory.program(program.id)).outages, [outages[1]!])
        assert.isTrue(Option.isNone(yield* directory.changeProgramOutages(freshId("ProgramId"), { add: outages })))
      }))

    it.effect("concurrent changes of a program's outage windows are never lost: 20 adds, alone or each in a transaction, all stay; then concurrent removes", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const transactor = yield* Transactor
        const { program } = yield* seedTenant()
        const window = (n: number) => ({
          id: `out_${String(n).padStart(2, "0")}`,
          start: new Date(Date.UTC(2024, 2, 1, n)),
          end: new Date(Date.UTC(2024, 2, 1, n, 30)),
          reason: `window ${n}`,
          restored: n,
          createdAt: new Date(Date.UTC(2024, 2, 2, n))
        })
        const ids = (p: Program) => (p.outages ?? []).map((o) => o.id).sort()
        const first = Array.from({ length: 10 }, (_, n) => window(n))
        const second = Array.from({ length: 10 }, (_, n) => window(n + 10))
        yield* Effect.all([
          ...first.map((o) => directory.changeProgramOutages(program.id, { add: [o] })),
          // In a transaction the change holds the program until commit, as a declaration's does.
          ...second.map((o) =>
            transactor.withTransaction(Effect.zipRight(
              directory.changeProgramOutages(program.id, { add: [o] }),
              directory.changeProgramOutages(program.id, { add: [{ ...o, restored: o.restored + 100 }] })
            ))
          )
        ], { concurrency: "unbounded" })
        const stored = Option.getOrThrow(yield* directory.program(program.id))
        assert.deepStrictEqual(ids(stored), [...first, ...second].map((o) => o.id))
        for (const o of stored.outages ?? []) {
          assert.strictEqual(o.restored, Number(o.id.slice(4)) + (Number(o.id.slice(4)) >= 10 ? 100 : 0))
        }
        yield* Effect.all(
          first.map((o) => directory.changeProgramOutages(program.id, { remove: [o.id] })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(ids(Option.getOrThrow(yield* directory.program(program.id))), second.map((o) => o.id))
      }))

    it.effect("creating a workspace, project or program whose id exists, or a project with a siteKey in use, fails and stores nothing", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const tenant = yield* seedTenant()
        const other = yield* seedTenant()
        const failure = <A, E, R>(self: Effect.Effect<A, E, R>) =>
          Effect.map(Effect.flip(self), (e) => (e as { _tag: string })._tag)
        assert.strictEqual(
          yield* failure(directory.createWorkspace(makeWorkspace({ id: tenant.workspace.id, name: "Other" }))),
          "StorageError"
        )
        assert.strictEqual(
          Option.getOrThrow(yield* directory.workspace(tenant.workspace.id)).name,
          tenant.workspace.name
        )
        assert.strictEqual(
          yield* failure(directory.createProject(makeProject(other.workspace.id, { id: tenant.project.id }))),
          "StorageError"
        )
        assert.strictEqual(
          Option.getOrThrow(yield* directory.project(tenant.project.id)).workspaceId,
          tenant.workspace.id
        )
        const taken = makeProject(other.workspace.id, { siteKey: tenant.project.siteKey })
        assert.strictEqual(yield* failure(directory.createProject(taken)), "StorageError")
        assert.isTrue(Option.isNone(yield* directory.project(taken.id)))
        assert.strictEqual(Option.getOrThrow(yield* directory.projectBySiteKey(taken.siteKey)).id, tenant.project.id)
        assert.strictEqual(
          yield* failure(directory.createProgram(makeProgram(other.project.id, { id: tenant.program.id }))),
          "StorageError"
        )
        assert.strictEqual(Option.getOrThrow(yield* directory.program(tenant.program.id)).projectId, tenant.project.id)
      }))

    it.effect("goLive: of 50 concurrent callers exactly one gets true; a live or unknown program gives false", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const { program } = yield* seedTenant()
        const results = yield* concurrently(50, () => directory.goLive(program.id))
        assert.strictEqual(countTrue(results), 1)
        assert.strictEqual(Option.getOrThrow(yield* directory.program(program.id)).status, "live")
        assert.isFalse(yield* directory.goLive(program.id))
        assert.isFalse(yield* directory.goLive(freshId("ProgramId")))
      }))
  })

export const memberSuite = (it: It) =>
  describe("MemberStore", () => {
    it.effect("lookup of an unknown member gives the member itself and no zone", () =>
      Effect.gen(function*() {
        const { project } = yield* seedTenant()
        const userHash = makeUserHash()
        const found = yield* memberOf(project.id, userHash)
        assert.strictEqual(found.userHash, userHash)
        assert.isTrue(Option.isNone(found.timezone))
      }))

    it.effect("lookup answers each id in input order, a repeated id at each position; no ids give []", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const [anon, member, stranger] = [makeUserHash(), makeUserHash(), makeUserHash()]
        yield* members.setTimezones([{ projectId: a.project.id, userHash: member, timezone: "Europe/Paris" }])
        yield* members.link(a.project.id, anon, member)
        const found = yield* members.lookup([
          { projectId: a.project.id, userHash: stranger },
          { projectId: a.project.id, userHash: anon },
          { projectId: b.project.id, userHash: anon },
          { projectId: a.project.id, userHash: member },
          { projectId: a.project.id, userHash: anon }
        ])
        assert.deepStrictEqual(found.map((m) => [m.userHash, Option.getOrNull(m.timezone)]), [
          [stranger, null],
          [member, "Europe/Paris"],
          [anon, null],
          [member, "Europe/Paris"],
          [member, "Europe/Paris"]
        ])
        assert.deepStrictEqual(yield* members.lookup([]), [])
      }))

    it.effect("setTimezone is returned by lookup, replaced by a later call, and kept per project", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const userHash = makeUserHash()
        yield* members.setTimezones([{ projectId: a.project.id, userHash, timezone: "Europe/Paris" }])
        assert.deepStrictEqual((yield* memberOf(a.project.id, userHash)).timezone, Option.some("Europe/Paris"))
        yield* members.setTimezones([{ projectId: a.project.id, userHash, timezone: "Asia/Kolkata" }])
        assert.deepStrictEqual((yield* memberOf(a.project.id, userHash)).timezone, Option.some("Asia/Kolkata"))
        assert.isTrue(Option.isNone((yield* memberOf(b.project.id, userHash)).timezone))
      }))

    it.effect("link is linked the first time, unchanged for the same pair, and names the other member on conflict", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const { project } = yield* seedTenant()
        const [anon, member, intruder] = [makeUserHash(), makeUserHash(), makeUserHash()]
        assert.strictEqual(yield* members.link(project.id, anon, member), "linked")
        assert.strictEqual(yield* members.link(project.id, anon, member), "unchanged")
        assert.deepStrictEqual(yield* members.link(project.id, anon, intruder), { linkedTo: member })
        // The conflict changed nothing: the anonymous id still resolves to the first member.
        assert.strictEqual((yield* memberOf(project.id, anon)).userHash, member)
        assert.strictEqual((yield* memberOf(project.id, intruder)).userHash, intruder)
      }))

    it.effect("linking an id that others were linked to moves them along: a chain resolves in one lookup", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const [first, second, member] = [makeUserHash(), makeUserHash(), makeUserHash()]
        yield* members.link(a.project.id, first, second)
        // The same pair in another project must not move.
        yield* members.link(b.project.id, first, second)
        assert.strictEqual(yield* members.link(a.project.id, second, member), "linked")
        assert.strictEqual((yield* memberOf(a.project.id, first)).userHash, member)
        assert.strictEqual((yield* memberOf(a.project.id, second)).userHash, member)
        assert.strictEqual((yield* memberOf(b.project.id, first)).userHash, second)
      }))

    it.effect("lookup of a linked anonymous id gives the member and the member's zone, in that project only", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const [anon, member] = [makeUserHash(), makeUserHash()]
        yield* members.setTimezones([{ projectId: a.project.id, userHash: member, timezone: "America/Sao_Paulo" }])
        yield* members.link(a.project.id, anon, member)
        const found = yield* memberOf(a.project.id, anon)
        assert.strictEqual(found.userHash, member)
        assert.deepStrictEqual(found.timezone, Option.some("America/Sao_Paulo"))
        assert.strictEqual((yield* memberOf(b.project.id, anon)).userHash, anon)
      }))

    it.effect("of 20 concurrent links of one anonymous id to different members exactly one is linked", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const { project } = yield* seedTenant()
        const anon = makeUserHash()
        const candidates = Array.from({ length: 20 }, () => makeUserHash())
        const results = yield* concurrently(20, (i) => members.link(project.id, anon, candidates[i]!))
        const winners = candidates.filter((_, i) => results[i] === "linked")
        assert.strictEqual(winners.length, 1)
        for (const r of results) if (r !== "linked") assert.deepStrictEqual(r, { linkedTo: winners[0]! })
        assert.strictEqual((yield* memberOf(project.id, anon)).userHash, winners[0])
      }))
  })

export const credentialSuite = (it: It) =>
  describe("CredentialStore", () => {
    it.effect("apiKeyByHash finds an unrevoked key; revokeApiKey hides it and a second revoke gives None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const credentials = yield* CredentialStore
        const workspace = makeWorkspace()
        yield* directory.createWorkspace(workspace)
        const key = makeApiKey(workspace.id)
        const other = makeApiKey(workspace.id)
        yield* credentials.createApiKey(key)
        yield* credentials.createApiKey(other)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* credentials.apiKeyByHash(key.tokenHash))), plain(key))
        const revokedAt = at(epoch, DAY)
        const revoked = Option.getOrThrow(yield* credentials.revokeApiKey(key.id, revokedAt))
        assert.strictEqual(revoked.id, key.id)
        assert.deepStrictEqual(revoked.revokedAt, revokedAt)
        assert.isTrue(Option.isNone(yield* credentials.apiKeyByHash(key.tokenHash)))
        assert.isTrue(Option.isNone(yield* credentials.revokeApiKey(key.id, at(revokedAt, DAY))))
        assert.isTrue(Option.isNone(yield* credentials.revokeApiKey(freshId("ApiKeyId"), revokedAt)))
        assert.isTrue(Option.isSome(yield* credentials.apiKeyByHash(other.tokenHash)))
        assert.isTrue(Option.isNone(yield* credentials.apiKeyByHash("0".repeat(64))))
      }))

    it.effect("grantByHash finds an unrevoked grant; revokeGrant hides it and a second revoke gives None", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const credentials = yield* CredentialStore
        const [w1, w2] = [makeWorkspace(), makeWorkspace()]
        yield* directory.createWorkspace(w1)
        yield* directory.createWorkspace(w2)
        const grant = makeGrant([w1.id, w2.id])
        yield* credentials.createGrant(grant)
        const found = Option.getOrThrow(yield* credentials.grantByHash(grant.tokenHash))
        assert.deepStrictEqual({ ...plain(found), workspaceIds: [...found.workspaceIds].sort() }, {
          ...plain(grant),
          workspaceIds: [...grant.workspaceIds].sort()
        })
        const revokedAt = at(epoch, DAY)
        assert.deepStrictEqual(
          Option.getOrThrow(yield* credentials.revokeGrant(grant.id, revokedAt)).revokedAt,
          revokedAt
        )
        assert.isTrue(Option.isNone(yield* credentials.grantByHash(grant.tokenHash)))
        assert.isTrue(Option.isNone(yield* credentials.revokeGrant(grant.id, revokedAt)))
        assert.isTrue(Option.isNone(yield* credentials.revokeGrant(freshId("OAuthGrantId"), revokedAt)))
      }))

    it.effect("a grant with an MCP token id (mcp_) is kept, found and revoked as an OAuth app's is", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const credentials = yield* CredentialStore
        const workspace = makeWorkspace()
        yield* directory.createWorkspace(workspace)
        const app = makeGrant([workspace.id])
        const token = makeGrant([workspace.id], { id: freshId("McpTokenId"), appName: "Support agent" })
        yield* credentials.createGrant(app)
        yield* credentials.createGrant(token)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* credentials.grantByHash(token.tokenHash))), plain(token))
        assert.strictEqual(Option.getOrThrow(yield* credentials.revokeGrant(token.id, at(epoch, DAY))).id, token.id)
        assert.isTrue(Option.isNone(yield* credentials.grantByHash(token.tokenHash)))
        assert.strictEqual(Option.getOrThrow(yield* credentials.grantByHash(app.tokenHash)).id, app.id)
      }))
  })

export const usageSuite = (it: It) =>
  describe("UsageStore", () => {
    it.effect("markActive is true once per (workspace, month, member) and activeCount counts distinct members", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const usage = yield* UsageStore
        const [w1, w2] = [makeWorkspace(), makeWorkspace()]
        yield* directory.createWorkspace(w1)
        yield* directory.createWorkspace(w2)
        const [m1, m2] = [makeUserHash(), makeUserHash()]
        const mark = (workspaceId: typeof w1.id, month: string, member: string) =>
          Effect.map(usage.markActive([{ workspaceId, month, member }]), (answers) => answers[0]!)
        assert.isTrue(yield* mark(w1.id, "2024-03", m1))
        assert.isFalse(yield* mark(w1.id, "2024-03", m1))
        assert.isTrue(yield* mark(w1.id, "2024-03", m2))
        assert.isTrue(yield* mark(w1.id, "2024-04", m1))
        assert.isTrue(yield* mark(w2.id, "2024-03", m1))
        assert.strictEqual(yield* usage.activeCount(w1.id, "2024-03"), 2)
        assert.strictEqual(yield* usage.activeCount(w1.id, "2024-04"), 1)
        assert.strictEqual(yield* usage.activeCount(w2.id, "2024-03"), 1)
        assert.strictEqual(yield* usage.activeCount(w2.id, "2024-05"), 0)
        assert.deepStrictEqual(yield* usage.markActive([]), [])
      }))

    it.effect("of 50 concurrent markActive calls for one member exactly one is true", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const usage = yield* UsageStore
        const workspace = makeWorkspace()
        yield* directory.createWorkspace(workspace)
        const member = makeUserHash()
        const results = yield* concurrently(
          50,
          () => usage.markActive([{ workspaceId: workspace.id, month: "2024-03", member }])
        )
        assert.strictEqual(countTrue(results.flat()), 1)
        assert.strictEqual(yield* usage.activeCount(workspace.id, "2024-03"), 1)
      }))
  })

export const experimentSuite = (it: It) =>
  describe("ExperimentStore", () => {
    it.effect("start refuses a second experiment while one runs; end stops it and a new one may start", () =>
      Effect.gen(function*() {
        const experiments = yield* ExperimentStore
        const { program } = yield* seedTenant()
        const first = makeExperiment(program, { holdoutPercent: 20 })
        assert.isTrue(yield* experiments.start(first))
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* experiments.running(program.id))), plain(first))
        assert.isFalse(yield* experiments.start(makeExperiment(program)))
        assert.strictEqual(Option.getOrThrow(yield* experiments.running(program.id)).id, first.id)
        const endedAt = at(epoch, 7 * DAY)
        const ended = Option.getOrThrow(yield* experiments.end(program.id, endedAt))
        assert.strictEqual(ended.id, first.id)
        assert.deepStrictEqual(ended.endedAt, endedAt)
        assert.isTrue(Option.isNone(yield* experiments.running(program.id)))
        const second = makeExperiment(program, { startedAt: at(endedAt, DAY) })
        assert.isTrue(yield* experiments.start(second))
        assert.strictEqual(Option.getOrThrow(yield* experiments.running(program.id)).id, second.id)
      }))

    it.effect("of 20 concurrent starts on one program exactly one is accepted", () =>
      Effect.gen(function*() {
        const experiments = yield* ExperimentStore
        const { program } = yield* seedTenant()
        const candidates = Array.from({ length: 20 }, () => makeExperiment(program))
        const results = yield* concurrently(20, (i) => experiments.start(candidates[i]!))
        assert.strictEqual(countTrue(results), 1)
        const winner = candidates[results.indexOf(true)]!
        assert.strictEqual(Option.getOrThrow(yield* experiments.running(program.id)).id, winner.id)
      }))

    it.effect("end with none running gives None, and experiments are per program", () =>
      Effect.gen(function*() {
        const experiments = yield* ExperimentStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        assert.isTrue(Option.isNone(yield* experiments.end(tenant.program.id, epoch)))
        assert.isTrue(yield* experiments.start(makeExperiment(tenant.program)))
        assert.isTrue(yield* experiments.start(makeExperiment(other)))
        assert.isTrue(Option.isSome(yield* experiments.end(tenant.program.id, epoch)))
        assert.isTrue(Option.isNone(yield* experiments.end(tenant.program.id, epoch)))
        assert.isTrue(Option.isSome(yield* experiments.running(other.id)))
        assert.isTrue(Option.isNone(yield* experiments.running(tenant.program.id)))
      }))
  })
