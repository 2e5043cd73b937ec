import { assert, describe, it } from "@effect/vitest"
import { Duration, Either, Option } from "effect"
import { Webhook } from "standardwebhooks"
import * as RetryPolicy from "../src/RetryPolicy.js"
import * as Signature from "../src/Signature.js"

const body = JSON.stringify({ id: "msg_1", type: "milestone.achieved", data: { userHash: "m-1" } })

describe("Signature", () => {
  it("our signed headers verify with the standardwebhooks package", () => {
    const secret = Signature.generateSecret()
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/)
    const headers = Signature.headers(secret, "msg_1", body, new Date())
    assert.deepStrictEqual(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body))
  })

  it("verify accepts what standardwebhooks signs, and any of several signatures (rotation)", () => {
    const secret = Signature.generateSecret()
    const old = Signature.generateSecret()
    const now = new Date()
    const theirs = new Webhook(secret).sign("msg_2", now, body)
    const headers = {
      "Webhook-Id": "msg_2",
      "Webhook-Timestamp": String(Math.floor(now.getTime() / 1000)),
      "Webhook-Signature": `${Signature.sign(old, "msg_2", now, body)} ${theirs}`
    }
    assert.isTrue(Either.isRight(Signature.verify(secret, headers, body)))
    assert.isTrue(Either.isRight(Signature.verify(old, headers, body)))
  })

  it("a tampered body, a wrong secret or a 6-minute-old timestamp is refused by both verifiers", () => {
    const secret = Signature.generateSecret()
    const fresh = Signature.headers(secret, "msg_3", body, new Date())
    const stale = Signature.headers(secret, "msg_3", body, new Date(Date.now() - 6 * 60_000))
    const tampered = body.replace("m-1", "m-2")
    for (
      const [h, b, s] of [[fresh, tampered, secret], [fresh, body, Signature.generateSecret()], [
        stale,
        body,
        secret
      ]] as const
    ) {
      assert.isTrue(Either.isLeft(Signature.verify(s, h, b)))
      assert.throws(() => new Webhook(s).verify(b, { ...h }))
    }
  })

  it("missing headers are refused", () => {
    const result = Signature.verify(Signature.generateSecret(), {}, body)
    assert.isTrue(Either.isLeft(result) && result.left.message === "Missing required headers")
  })
})

describe("RetryPolicy", () => {
  it("retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then gives up", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) =>
      Duration.toMillis(Option.getOrThrow(RetryPolicy.nextAttemptDelay(n)))
    )
    assert.deepStrictEqual(delays, [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6])
    assert.isTrue(Option.isNone(RetryPolicy.nextAttemptDelay(8)))
  })

  it("a Retry-After only pushes the next attempt later", () => {
    assert.strictEqual(Duration.toMillis(Option.getOrThrow(RetryPolicy.nextAttemptDelay(1, Duration.seconds(7)))), 7000)
    assert.strictEqual(
      Duration.toMillis(Option.getOrThrow(RetryPolicy.nextAttemptDelay(2, Duration.seconds(7)))),
      300_000
    )
  })

  it("2xx is delivered, 410 is gone, 3xx and every other status is retried", () => {
    assert.deepStrictEqual([200, 204, 301, 302, 404, 410, 429, 500].map(RetryPolicy.classify), [
      "delivered",
      "delivered",
      "retry",
      "retry",
      "retry",
      "gone",
      "retry",
      "retry"
    ])
  })
})
