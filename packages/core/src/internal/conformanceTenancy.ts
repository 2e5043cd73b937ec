/**
 * Conformance of the tenant ports: directory (workspaces, projects, programs, going live),
 * members (zones, aliases), credentials, usage and experiments.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import type { Program } from "../Domain.js"
import * as Policy from "../Policy.js"
import { CredentialStore, DirectoryStore, ExperimentStore, MemberStore, UsageStore } from "../Ports.js"
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
  makeUserHash,
  makeWorkspace,
  seedProgram,
  seedTenant
} from "./conformanceFixtures.js"
import { concurrently, countTrue, DAY, type It, plain } from "./conformanceKit.js"

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id).sort()

/** A program's policy as its JSON (`undefined` without one), and the program's mode. */
const countingOf = (program: Program) => ({
  mode: program.mode,
  policy: program.policy === undefined ? undefined : Policy.toJson(program.policy)
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
        const members = yield* MemberStore
        const { project } = yield* seedTenant()
        const userHash = makeUserHash()
        const found = yield* members.lookup(project.id, userHash)
        assert.strictEqual(found.userHash, userHash)
        assert.isTrue(Option.isNone(found.timezone))
      }))

    it.effect("setTimezone is returned by lookup, replaced by a later call, and kept per project", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const userHash = makeUserHash()
        yield* members.setTimezone(a.project.id, userHash, "Europe/Paris")
        assert.deepStrictEqual((yield* members.lookup(a.project.id, userHash)).timezone, Option.some("Europe/Paris"))
        yield* members.setTimezone(a.project.id, userHash, "Asia/Kolkata")
        assert.deepStrictEqual((yield* members.lookup(a.project.id, userHash)).timezone, Option.some("Asia/Kolkata"))
        assert.isTrue(Option.isNone((yield* members.lookup(b.project.id, userHash)).timezone))
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
        assert.strictEqual((yield* members.lookup(project.id, anon)).userHash, member)
        assert.strictEqual((yield* members.lookup(project.id, intruder)).userHash, intruder)
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
        assert.strictEqual((yield* members.lookup(a.project.id, first)).userHash, member)
        assert.strictEqual((yield* members.lookup(a.project.id, second)).userHash, member)
        assert.strictEqual((yield* members.lookup(b.project.id, first)).userHash, second)
      }))

    it.effect("lookup of a linked anonymous id gives the member and the member's zone, in that project only", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const [anon, member] = [makeUserHash(), makeUserHash()]
        yield* members.setTimezone(a.project.id, member, "America/Sao_Paulo")
        yield* members.link(a.project.id, anon, member)
        const found = yield* members.lookup(a.project.id, anon)
        assert.strictEqual(found.userHash, member)
        assert.deepStrictEqual(found.timezone, Option.some("America/Sao_Paulo"))
        assert.strictEqual((yield* members.lookup(b.project.id, anon)).userHash, anon)
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
        assert.strictEqual((yield* members.lookup(project.id, anon)).userHash, winners[0])
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
        assert.isTrue(yield* usage.markActive(w1.id, "2024-03", m1))
        assert.isFalse(yield* usage.markActive(w1.id, "2024-03", m1))
        assert.isTrue(yield* usage.markActive(w1.id, "2024-03", m2))
        assert.isTrue(yield* usage.markActive(w1.id, "2024-04", m1))
        assert.isTrue(yield* usage.markActive(w2.id, "2024-03", m1))
        assert.strictEqual(yield* usage.activeCount(w1.id, "2024-03"), 2)
        assert.strictEqual(yield* usage.activeCount(w1.id, "2024-04"), 1)
        assert.strictEqual(yield* usage.activeCount(w2.id, "2024-03"), 1)
        assert.strictEqual(yield* usage.activeCount(w2.id, "2024-05"), 0)
      }))

    it.effect("of 50 concurrent markActive calls for one member exactly one is true", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        const usage = yield* UsageStore
        const workspace = makeWorkspace()
        yield* directory.createWorkspace(workspace)
        const member = makeUserHash()
        const results = yield* concurrently(50, () => usage.markActive(workspace.id, "2024-03", member))
        assert.strictEqual(countTrue(results), 1)
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
