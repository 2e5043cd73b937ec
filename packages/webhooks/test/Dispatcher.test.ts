import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Domain, Ids, Ports, SecretBox } from "@streaks/core"
import * as Credentials from "@streaks/core/Credentials"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Dispatcher from "../src/Dispatcher.js"

/** A receiver on 127.0.0.1 that answers 200 after `delayMs`; counts the webhook-ids it saw. */
const slowReceiver = (delayMs: number) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; seen: Map<string, number>; close: () => void }>((resume) => {
      const seen = new Map<string, number>()
      const server = createServer((req, res) => {
        const id = String(req.headers["webhook-id"])
        seen.set(id, (seen.get(id) ?? 0) + 1)
        req.resume().on("end", () => setTimeout(() => res.writeHead(200).end(), delayMs))
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}/hook`,
          seen,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    (r) => Effect.sync(() => r.close())
  )

/** `count` due messages for one subscription to `url`. */
const seed = (url: string, count: number) =>
  Effect.gen(function*() {
    const subscriptions = yield* Ports.SubscriptionStore
    const outbox = yield* Ports.Outbox
    const box = yield* SecretBox.SecretBox
    const subscription = new Domain.Subscription({
      id: yield* Ids.make("SubscriptionId"),
      workspaceId: yield* Ids.make("WorkspaceId"),
      projectId: yield* Ids.make("ProjectId"),
      programId: yield* Ids.make("ProgramId"),
      url,
      eventTypes: ["milestone.achieved"],
      secretSealed: box.seal(Credentials.generate("subscription")),
      createdBy: { type: "api_key", id: "key_test" },
      createdAt: new Date()
    })
    yield* subscriptions.create(subscription)
    const messages = yield* Effect.forEach(Array.from({ length: count }), () =>
      Effect.map(Ids.make("MessageId"), (id) =>
        new Domain.OutboxMessage({
          id,
          subscriptionId: subscription.id,
          projectId: subscription.projectId,
          programId: subscription.programId,
          type: "milestone.achieved",
          payload: JSON.stringify({ id }),
          status: "pending",
          attempts: 0,
          nextAttemptAt: new Date(Date.now() - 1000),
          createdAt: new Date()
        })))
    yield* outbox.enqueue(messages)
    return messages
  })

const storage = Layer.mergeAll(MemoryStorage.layer, SecretBox.layerEphemeral)

/** `first` runs one pass while `second` runs a pass every 100 ms beside it, for 2.5 s. */
const sideBySide = (first: Dispatcher.Dispatcher["Type"], second: Dispatcher.Dispatcher["Type"]) =>
  Effect.all([
    first.runOnce,
    Effect.gen(function*() {
      yield* Effect.sleep("50 millis")
      let delivered = 0
      for (let i = 0; i < 25; i++) {
        delivered += (yield* second.runOnce).delivered
        yield* Effect.sleep("100 millis")
      }
      return delivered
    })
  ], { concurrency: "unbounded" })

const allDelivered = (messages: ReadonlyArray<Domain.OutboxMessage>) =>
  Effect.gen(function*() {
    const outbox = yield* Ports.Outbox
    const delivered = yield* outbox.recentDelivered(messages[0]!.programId, "milestone.achieved", 1_000)
    const ids = new Set(delivered.map((m) => m.id))
    return messages.every((m) => ids.has(m.id))
  })

// Sends go one at a time and take 250 ms each, so a batch of 6 takes 1.5 s.
const slow = { concurrency: 1, batchSize: 6, leaseMargin: "300 millis", timeout: "500 millis" } as const

describe("Dispatcher", () => {
  it.scopedLive("a claim's default lease covers its whole batch: a dispatcher polling meanwhile finds nothing to send", () =>
    Effect.gen(function*() {
      const receiver = yield* slowReceiver(250)
      const messages = yield* seed(receiver.url, 6)
      const [pass, other] = yield* sideBySide(yield* Dispatcher.make(slow), yield* Dispatcher.make(slow))
      assert.deepStrictEqual([pass.delivered, other], [6, 0])
      assert.deepStrictEqual(messages.map((m) => receiver.seen.get(m.id)), messages.map(() => 1))
      assert.isTrue(yield* allDelivered(messages))
    }).pipe(Effect.provide(storage), Effect.provide(NodeHttpClient.layerUndici)))

  it.scopedLive("a pass that outlasts its lease renews it before each send, and leaves a message whose lease ran out to its new holder: nothing is sent twice", () =>
    Effect.gen(function*() {
      const receiver = yield* slowReceiver(250)
      const messages = yield* seed(receiver.url, 6)
      const short = { ...slow, lease: "1 second" } as const
      const [pass, other] = yield* sideBySide(yield* Dispatcher.make(short), yield* Dispatcher.make(short))
      assert.strictEqual(pass.delivered + other, 6)
      assert.isAbove(pass.delivered, 1, "renewed past its first lease")
      assert.deepStrictEqual(
        messages.map((m) => receiver.seen.get(m.id)),
        messages.map(() => 1),
        "each message sent once"
      )
      assert.isTrue(yield* allDelivered(messages))
    }).pipe(Effect.provide(storage), Effect.provide(NodeHttpClient.layerUndici)))
})
