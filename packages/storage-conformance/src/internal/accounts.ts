/**
 * Conformance of the accounts records and the audit log: users, sessions and invites through the
 * `Catalog` (round trips, the e-mail key's uniqueness, the selections accounts make), and the
 * `AuditLog` port (newest-first reads by workspace and time, keyset pages, same-transaction writes).
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { AuditEntry, Invite, Session, User } from "@streaks/core/Domain"
import type * as Ids from "@streaks/core/Ids"
import { AuditLog, Catalog, type Held, Outbox, SubscriptionStore, Transactor } from "@streaks/core/Ports"
import {
  at,
  epoch,
  freshId,
  makeAttempt,
  makeMessage,
  makeWorkspace,
  makeSubscription,
  randomHex,
  seedTenant,
  type Tenant
} from "../Fixtures.js"
import { Boom, concurrently, countTrue, HOUR, type It, MINUTE } from "./kit.js"

const makeUser = (overrides: Partial<ConstructorParameters<typeof User>[0]> = {}) => {
  const email = `Person.${randomHex(6)}@Example.com`
  return new User({
    id: freshId("UserId"),
    email,
    emailKey: email.toLowerCase(),
    name: "A person",
    memberships: [],
    failedSignIns: [],
    createdAt: epoch,
    ...overrides
  })
}

const entryOf = (workspaceId: Ids.WorkspaceId | undefined, atMs: number, action = "thing.change") =>
  new AuditEntry({
    id: freshId("AuditEntryId"),
    at: new Date(atMs),
    ...(workspaceId === undefined ? {} : { workspaceId }),
    actor: { kind: "api_key", id: freshId("ApiKeyId") },
    clientAddress: "203.0.113.7",
    action,
    target: freshId("ProgramId"),
    details: { name: "Ünïcode ✓", count: 2, nested: { ok: true }, list: [1, "two"] }
  })

const plainEntry = (e: AuditEntry) => ({ ...e, at: e.at.getTime() })

export const accountsSuite = (it: It) =>
  describe("Accounts records", () => {
    it.effect("a user, a session and an invite round-trip every field; users are found by e-mail key", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const workspace = makeWorkspace()
        const user = makeUser({
          memberships: [{ workspaceId: workspace.id, role: "owner" }, {
            workspaceId: freshId("WorkspaceId"),
            role: "viewer"
          }],
          passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
          failedSignIns: [at(epoch, MINUTE), at(epoch, 2 * MINUTE)]
        })
        const invited = makeUser()
        assert.isTrue(yield* catalog.insert("user", user))
        assert.isTrue(yield* catalog.insert("user", invited))
        const [found] = yield* catalog.find("user", { emailKey: user.emailKey })
        assert.instanceOf(found, User)
        assert.deepStrictEqual(found, user)
        const [bare] = yield* catalog.find("user", { id: invited.id })
        assert.isUndefined(bare!.passwordHash)
        assert.deepStrictEqual(bare!.failedSignIns, [])

        const session = new Session({
          id: freshId("SessionId"),
          userId: user.id,
          tokenHash: randomHex(32),
          createdAt: epoch,
          lastSeenAt: at(epoch, HOUR),
          expiresAt: at(epoch, 7 * 24 * HOUR)
        })
        assert.isTrue(yield* catalog.insert("session", session))
        assert.deepStrictEqual(yield* catalog.find("session", { tokenHash: session.tokenHash }), [session])
        assert.deepStrictEqual(yield* catalog.find("session", { userId: user.id }), [session])

        const invite = new Invite({
          id: freshId("InviteId"),
          userId: invited.id,
          tokenHash: randomHex(32),
          createdAt: epoch,
          expiresAt: at(epoch, 72 * HOUR)
        })
        assert.isTrue(yield* catalog.insert("invite", invite))
        assert.deepStrictEqual(yield* catalog.find("invite", { tokenHash: invite.tokenHash, usedAt: null }), [invite])
      }))

    it.effect("a second user with the same e-mail key is refused, also among concurrent inserts", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const first = makeUser()
        assert.isTrue(yield* catalog.insert("user", first))
        assert.isFalse(yield* catalog.insert("user", makeUser({ email: first.email, emailKey: first.emailKey })))
        const key = `racer.${randomHex(6)}@example.com`
        const results = yield* concurrently(6, () => catalog.insert("user", makeUser({ email: key, emailKey: key })))
        assert.strictEqual(countTrue(results), 1)
        assert.strictEqual((yield* catalog.find("user", { emailKey: key })).length, 1)
      }))

    it.effect("an invite is used once: of concurrent updates selecting usedAt absent, one changes it", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const user = makeUser()
        yield* catalog.insert("user", user)
        const invite = new Invite({
          id: freshId("InviteId"),
          userId: user.id,
          tokenHash: randomHex(32),
          createdAt: epoch,
          expiresAt: at(epoch, HOUR)
        })
        yield* catalog.insert("invite", invite)
        const changed = yield* concurrently(
          5,
          () => catalog.update("invite", { id: invite.id, usedAt: null }, { usedAt: at(epoch, MINUTE) })
        )
        assert.strictEqual(changed.filter((c) => c.length === 1).length, 1)
        const [used] = yield* catalog.find("invite", { id: invite.id })
        assert.deepStrictEqual(used!.usedAt, at(epoch, MINUTE))
        assert.deepStrictEqual(yield* catalog.find("invite", { tokenHash: invite.tokenHash, usedAt: null }), [])
      }))

    it.effect("failed sign-ins and the password hash are updated and cleared; a removed session is gone", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const user = makeUser()
        yield* catalog.insert("user", user)
        const [updated] = yield* catalog.update("user", { id: user.id }, {
          failedSignIns: [at(epoch, MINUTE)],
          passwordHash: "$argon2id$x"
        })
        assert.deepStrictEqual(updated!.failedSignIns, [at(epoch, MINUTE)])
        assert.strictEqual(updated!.passwordHash, "$argon2id$x")
        const [cleared] = yield* catalog.update("user", { id: user.id }, { failedSignIns: [] })
        assert.deepStrictEqual(cleared!.failedSignIns, [])
        const session = new Session({
          id: freshId("SessionId"),
          userId: user.id,
          tokenHash: randomHex(32),
          createdAt: epoch,
          lastSeenAt: epoch,
          expiresAt: at(epoch, HOUR)
        })
        yield* catalog.insert("session", session)
        assert.strictEqual((yield* catalog.remove("session", { tokenHash: session.tokenHash })).length, 1)
        assert.deepStrictEqual(yield* catalog.find("session", { id: session.id }), [])
      }))
  })

export const auditSuite = (it: It) =>
  describe("AuditLog", () => {
    it.effect("entries round-trip and read newest first within their workspaces and [from, to)", () =>
      Effect.gen(function*() {
        const log = yield* AuditLog
        const a = freshId("WorkspaceId")
        const b = freshId("WorkspaceId")
        const base = Date.UTC(2031, 0, 1) + Number.parseInt(randomHex(3), 16) * 1000
        const entries = [entryOf(a, base), entryOf(a, base + 2000), entryOf(b, base + 1000), entryOf(a, base + 3000)]
        yield* log.append(entries)
        const ofA = yield* log.list({ workspaceIds: [a], limit: 10 })
        assert.deepStrictEqual(ofA.map(plainEntry), [entries[3]!, entries[1]!, entries[0]!].map(plainEntry))
        assert.instanceOf(ofA[0], AuditEntry)
        const both = yield* log.list({ workspaceIds: [a, b], limit: 10 })
        assert.deepStrictEqual(
          both.map((e) => e.id),
          [entries[3]!, entries[1]!, entries[2]!, entries[0]!].map((e) => e.id)
        )
        const window = yield* log.list({
          workspaceIds: [a, b],
          from: new Date(base + 1000),
          to: new Date(base + 3000),
          limit: 10
        })
        assert.deepStrictEqual(window.map((e) => e.id), [entries[1]!.id, entries[2]!.id])
        assert.deepStrictEqual(yield* log.list({ workspaceIds: [freshId("WorkspaceId")], limit: 10 }), [])
      }))

    it.effect("pages by keyset: `before` the last entry of a page gives the next, ties on `at` broken by id", () =>
      Effect.gen(function*() {
        const log = yield* AuditLog
        const w = freshId("WorkspaceId")
        const base = Date.UTC(2032, 0, 1) + Number.parseInt(randomHex(3), 16) * 1000
        // Three entries share one instant: the order among them is by id, descending.
        const entries = [
          entryOf(w, base),
          entryOf(w, base + 5),
          entryOf(w, base + 5),
          entryOf(w, base + 5),
          entryOf(w, base + 9)
        ]
        yield* log.append(entries)
        const all = yield* log.list({ workspaceIds: [w], limit: 10 })
        assert.strictEqual(all.length, 5)
        const pages: Array<string> = []
        let before: { at: Date; id: string } | undefined
        for (;;) {
          const page = yield* log.list({ workspaceIds: [w], limit: 2, before })
          pages.push(...page.map((e) => e.id))
          if (page.length < 2) break
          const last = page[page.length - 1]!
          before = { at: last.at, id: last.id }
        }
        assert.deepStrictEqual(pages, all.map((e) => e.id))
        const tied = all.slice(1, 4).map((e) => e.id)
        assert.deepStrictEqual(tied, [...tied].sort().reverse())
        // The operator's read (no workspaces) sees entries without a workspace too.
        const loose = entryOf(undefined, base + 7)
        yield* log.append([loose])
        const everything = yield* log.list({ from: new Date(base), to: new Date(base + 10), limit: 50 })
        assert.include(everything.map((e) => e.id), loose.id)
        assert.notInclude((yield* log.list({ workspaceIds: [w], limit: 10 })).map((e) => e.id), loose.id)
      }))

    it.effect("an entry appended in a transaction that fails is not kept; one that commits is", () =>
      Effect.gen(function*() {
        const log = yield* AuditLog
        const transactor = yield* Transactor
        const w = freshId("WorkspaceId")
        const base = Date.UTC(2033, 0, 1)
        const failed = yield* transactor.withTransaction(
          Effect.zipRight(log.append([entryOf(w, base)]), Effect.fail(new Boom()))
        ).pipe(Effect.flip)
        assert.strictEqual(failed._tag, "Boom")
        assert.deepStrictEqual(yield* log.list({ workspaceIds: [w], limit: 10 }), [])
        const kept = entryOf(w, base + 1)
        yield* transactor.withTransaction(log.append([kept]))
        assert.deepStrictEqual((yield* log.list({ workspaceIds: [w], limit: 10 })).map((e) => e.id), [kept.id])
      }))
  })

const seedSubscription = (tenant: Tenant) =>
  Effect.gen(function*() {
    const subscription = makeSubscription(tenant)
    yield* (yield* SubscriptionStore).create(subscription)
    return subscription
  })

// Far past every instant other suites claim at: a message made due here is never claimed by them.
const future = new Date(Date.UTC(2200, 0, 1))

export const deliveriesLogSuite = (it: It) =>
  describe("Outbox deliveries log", () => {
    it.effect("ofSubscription: the subscription's messages newest first, at most limit, each with its attempts in order", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const tenant = yield* seedTenant()
        const subscription = yield* seedSubscription(tenant)
        const other = yield* seedSubscription(tenant)
        const base = at(future, Number.parseInt(randomHex(2), 16) * MINUTE)
        const messages = [0, 1, 2].map((i) =>
          makeMessage(subscription, { createdAt: at(base, i * MINUTE), nextAttemptAt: at(future, 100 * HOUR) })
        )
        const foreign = makeMessage(other, { nextAttemptAt: at(future, 100 * HOUR) })
        yield* outbox.enqueue([...messages, foreign])
        const held = (m: typeof messages[number]): Held => ({ id: m.id, leaseUntil: m.nextAttemptAt })
        // Two attempts on the newest: a 500, then a success; one on the oldest that timed out.
        assert.isTrue(
          yield* outbox.settle(
            held(messages[2]!),
            { _tag: "Pending", attempts: 1, nextAttemptAt: messages[2]!.nextAttemptAt },
            makeAttempt(messages[2]!.id, { attempt: 1, status: 500, at: base })
          )
        )
        assert.isTrue(
          yield* outbox.settle(
            held(messages[2]!),
            { _tag: "Delivered", attempts: 2, at: at(base, MINUTE) },
            makeAttempt(messages[2]!.id, { attempt: 2, status: 204, at: at(base, MINUTE) })
          )
        )
        assert.isTrue(
          yield* outbox.settle(
            held(messages[0]!),
            { _tag: "Failed", attempts: 1 },
            makeAttempt(messages[0]!.id, { attempt: 1, error: "timeout", latencyMs: 15_000, at: base })
          )
        )
        const log = yield* outbox.ofSubscription(subscription.id, 10)
        assert.deepStrictEqual(log.map((h) => h.message.id), [messages[2]!.id, messages[1]!.id, messages[0]!.id])
        assert.deepStrictEqual(log.map((h) => h.message.status), ["delivered", "pending", "failed"])
        assert.deepStrictEqual(log[0]!.attempts.map((a) => [a.attempt, a.status]), [[1, 500], [2, 204]])
        assert.deepStrictEqual(log[1]!.attempts, [])
        assert.strictEqual(log[2]!.attempts[0]!.error, "timeout")
        assert.strictEqual(log[2]!.attempts[0]!.latencyMs, 15_000)
        assert.deepStrictEqual((yield* outbox.ofSubscription(subscription.id, 2)).map((h) => h.message.id), [
          messages[2]!.id,
          messages[1]!.id
        ])
        assert.deepStrictEqual(yield* outbox.ofSubscription(freshId("SubscriptionId"), 10), [])
      }))

    it.effect("redeliver makes a delivered or failed message pending and due now; a pending one stays; others answer false", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const tenant = yield* seedTenant()
        const subscription = yield* seedSubscription(tenant)
        const other = yield* seedSubscription(tenant)
        const lease = at(future, 200 * HOUR)
        const delivered = makeMessage(subscription, { nextAttemptAt: lease })
        const failed = makeMessage(subscription, { nextAttemptAt: lease })
        const pending = makeMessage(subscription, { nextAttemptAt: lease })
        yield* outbox.enqueue([delivered, failed, pending])
        yield* outbox.settle(
          { id: delivered.id, leaseUntil: lease },
          { _tag: "Delivered", attempts: 1, at: future },
          makeAttempt(delivered.id, { attempt: 1, status: 200, at: future })
        )
        yield* outbox.settle({ id: failed.id, leaseUntil: lease }, { _tag: "Failed", attempts: 8 })
        const now = at(future, 300 * HOUR)
        assert.isTrue(yield* outbox.redeliver(subscription.id, delivered.id, now))
        assert.isTrue(yield* outbox.redeliver(subscription.id, failed.id, now))
        assert.isTrue(yield* outbox.redeliver(subscription.id, pending.id, now))
        assert.isFalse(yield* outbox.redeliver(other.id, delivered.id, now), "another subscription's message")
        assert.isFalse(yield* outbox.redeliver(subscription.id, freshId("MessageId"), now))
        const byId = new Map((yield* outbox.ofSubscription(subscription.id, 10)).map((h) => [h.message.id, h]))
        const again = byId.get(delivered.id)!
        assert.strictEqual(again.message.status, "pending")
        assert.deepStrictEqual(again.message.nextAttemptAt, now)
        assert.strictEqual(again.message.attempts, 1)
        assert.isUndefined(again.message.deliveredAt)
        assert.strictEqual(again.attempts.length, 1, "the attempts made before are kept")
        assert.strictEqual(byId.get(failed.id)!.message.status, "pending")
        assert.strictEqual(byId.get(failed.id)!.message.attempts, 8)
        assert.deepStrictEqual(byId.get(pending.id)!.message.nextAttemptAt, lease, "a pending message is left alone")
      }))
  })
