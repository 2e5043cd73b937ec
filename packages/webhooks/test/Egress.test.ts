/**
 * Deliveries connect only to public addresses, checked when the connection opens: a literal
 * non-public address and a name that resolves to one (DNS rebinding: public when subscribed,
 * loopback now) get no connection. Every test connects, if at all, only to 127.0.0.1.
 */
import type { HttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Egress from "../src/Egress.js"
import * as Sender from "../src/Sender.js"
import * as Signature from "../src/Signature.js"

/** A receiver on 127.0.0.1 that answers 200 and counts the connections it accepted. */
const receiver = Effect.acquireRelease(
  Effect.async<{ port: number; connections: () => number; close: () => void }>((resume) => {
    let connections = 0
    const server = createServer((req, res) => req.resume().on("end", () => res.writeHead(200).end()))
    server.on("connection", () => connections++)
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        port: (server.address() as AddressInfo).port,
        connections: () => connections,
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      })))
  }),
  (r) => Effect.sync(() => r.close())
)

/** A resolver that answers 127.0.0.1 for every name: a public name rebound to loopback. */
const rebound: Egress.Lookup = (_hostname, options, callback) =>
  (options as { all?: boolean }).all === true
    ? callback(null, [{ address: "127.0.0.1", family: 4 }])
    : callback(null, "127.0.0.1", 4)

const secret = Signature.generateSecret()
const send = (url: string, client: Layer.Layer<HttpClient.HttpClient>) =>
  Sender.send({ url, id: "msg_e", body: "{}", secret, now: new Date(), timeout: "3 seconds" }).pipe(
    Effect.provide(client)
  )

describe("Egress", () => {
  it.scopedLive("a literal loopback address is refused before connecting; the error says why", () =>
    Effect.gen(function*() {
      const r = yield* receiver
      const attempt = yield* send(`http://127.0.0.1:${r.port}/hook`, Egress.layerHttpClient({ allowPrivate: false }))
      assert.strictEqual(attempt.outcome, "retry")
      assert.isUndefined(attempt.status)
      assert.match(attempt.error ?? "", /not a public internet address/)
      assert.strictEqual(r.connections(), 0)
    }))

  it.scopedLive("a name that resolves to loopback when the connection opens (DNS rebinding) gets no connection", () =>
    Effect.gen(function*() {
      const r = yield* receiver
      const client = Egress.layerHttpClient({ allowPrivate: false, lookup: rebound })
      const attempt = yield* send(`http://hooks.example:${r.port}/hook`, client)
      assert.strictEqual(attempt.outcome, "retry")
      assert.match(attempt.error ?? "", /not a public internet address/)
      assert.strictEqual(r.connections(), 0)
    }))

  it.scopedLive("with private addresses allowed (development), the same name and address are delivered", () =>
    Effect.gen(function*() {
      const r = yield* receiver
      const client = Egress.layerHttpClient({ allowPrivate: true, lookup: rebound })
      assert.strictEqual((yield* send(`http://hooks.example:${r.port}/hook`, client)).outcome, "delivered")
      assert.strictEqual((yield* send(`http://127.0.0.1:${r.port}/hook`, client)).outcome, "delivered")
      assert.isAtLeast(r.connections(), 1)
    }))

  it.effect("publicOnly keeps a name's public addresses and refuses a name that has none", () =>
    Effect.gen(function*() {
      const two: Egress.Lookup = (_h, _o, callback) =>
        callback(null, [{ address: "10.0.0.1", family: 4 }, { address: "93.184.216.34", family: 4 }])
      const guarded = Egress.publicOnly(two)
      const one = yield* Effect.async<string>((resume) =>
        guarded(
          "mixed.example",
          {},
          (error, address) => resume(error === null ? Effect.succeed(String(address)) : Effect.die(error))
        )
      )
      assert.strictEqual(one, "93.184.216.34")
      const refused = yield* Effect.async<string>((resume) =>
        Egress.publicOnly(rebound)(
          "rebound.example",
          { all: true },
          (error) => resume(Effect.succeed(error?.message ?? ""))
        )
      )
      assert.match(refused, /not a public internet address/)
    }))
})
