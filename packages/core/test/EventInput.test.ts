import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Schema, TestClock } from "effect"
import * as EventInput from "../src/EventInput.js"
import { isUserHash, UserHash } from "../src/Ids.js"

const NOW = Date.UTC(2026, 4, 10, 12)
const base = { siteKey: "site_abc", userHash: "u_1", event: "lesson_done" }

/** The InvalidBody message of a body that must be refused. */
const refused = (
  decode: (u: unknown) => Effect.Effect<unknown, { readonly _tag: string; readonly message?: string | undefined }>,
  body: unknown
) =>
  Effect.map(Effect.flip(decode(body)), (e) => {
    assert.strictEqual(e._tag, "InvalidBody")
    return e.message ?? ""
  })

describe("EventInput", () => {
  it.effect("an event record normalises to an action: eventType defaults to streak_interaction, analytics parts kept", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const action = yield* EventInput.decodeEventRecord({
        ...base,
        ts: "2026-05-10T13:30:00+02:00",
        tz: "Europe/Paris",
        meta: { plan: "pro" },
        consent: { analytics: true },
        error: "boom",
        source: "api",
        sessionId: "s1",
        idempotencyKey: "k1",
        test: true,
        unknownField: 1
      })
      assert.strictEqual(action.eventType, "streak_interaction")
      assert.strictEqual(action.event, "lesson_done")
      assert.strictEqual(action.ts?.toISOString(), "2026-05-10T11:30:00.000Z")
      assert.strictEqual(action.tz, "Europe/Paris")
      assert.isTrue(action.test)
      assert.deepStrictEqual(action.extra, { meta: { plan: "pro" }, error: "boom", consent: { analytics: true } })
      const plain = yield* EventInput.decodeEventRecord(base)
      assert.isUndefined(plain.ts)
      assert.isUndefined(plain.extra)
      assert.isFalse(plain.test)
    }))

  it.effect("siteKey, userHash and event (or kind) are required on /v1/e and /v1/server/e", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(EventInput.decodeEventRecord, { userHash: "u", event: "e" }), "siteKey")
      assert.include(yield* refused(EventInput.decodeEventRecord, { siteKey: "site_a", event: "e" }), "userHash")
      assert.include(yield* refused(EventInput.decodeEventRecord, { siteKey: "site_a", userHash: "u" }), "event")
      assert.include(yield* refused(EventInput.decodeEventRecord, "not an object"), "body")
      assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, userHash: 42 }), "userHash")
    }))

  it.effect("kind is an alias of event; both present and different is INVALID_BODY naming kind", () =>
    Effect.gen(function*() {
      const { event: _, ...noEvent } = base
      assert.strictEqual((yield* EventInput.decodeEventRecord({ ...noEvent, kind: "quiz" })).event, "quiz")
      assert.strictEqual((yield* EventInput.decodeEventRecord({ ...base, kind: "lesson_done" })).event, "lesson_done")
      assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, kind: "quiz" }), "kind")
    }))

  it.effect("a userHash that is a raw e-mail, empty or over 256 characters is INVALID_BODY", () =>
    Effect.gen(function*() {
      for (const userHash of ["jane.doe@example.com", "", "x".repeat(257)]) {
        assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, userHash }), "userHash")
      }
      assert.strictEqual(
        (yield* EventInput.decodeEventRecord({ ...base, userHash: "x".repeat(256) })).userHash.length,
        256
      )
      assert.strictEqual(
        (yield* EventInput.decodeEventRecord({ ...base, userHash: "team@slack" })).userHash,
        "team@slack"
      )
    }))

  it.effect("checkEventRecord (the fast path's decode, with now given) answers as decodeEventRecord does", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const bodies = [
        { ...base, ts: new Date(NOW + 4 * 60_000).toISOString(), tz: "Europe/Paris", meta: { a: 1 } },
        { ...base, ts: new Date(NOW + 6 * 60_000).toISOString() },
        { ...base, userHash: "" },
        { ...base, kind: "quiz" },
        { siteKey: "site_a" },
        "not an object"
      ]
      for (const body of bodies) {
        const expected = yield* Effect.either(EventInput.decodeEventRecord(body))
        const actual = EventInput.checkEventRecord(body, new Date(NOW))
        assert.deepStrictEqual(
          Either.match(actual, { onLeft: (e) => e.message, onRight: (a) => a }),
          Either.match(expected, { onLeft: (e) => e.message, onRight: (a) => a }),
          JSON.stringify(body)
        )
      }
    }))

  it("the read path's plain userHash test agrees with the UserHash schema", () => {
    const is = Schema.is(UserHash)
    const samples = [
      "u1",
      "",
      "x".repeat(256),
      "x".repeat(257),
      "jane.doe@example.com",
      "team@slack",
      "a b@c.d",
      "a@b.c d",
      42,
      null
    ]
    for (const u of samples) assert.strictEqual(isUserHash(u), is(u), JSON.stringify(u))
    fc.assert(fc.property(
      fc.oneof(
        fc.string({ maxLength: 300 }),
        fc.emailAddress(),
        fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a}@${b}`)
      ),
      (u) => isUserHash(u) === is(u)
    ))
  })

  it.effect("event over 128 characters and idempotencyKey over 255 are INVALID_BODY", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, event: "e".repeat(129) }), "event")
      assert.include(
        yield* refused(EventInput.decodeEventRecord, { ...base, idempotencyKey: "k".repeat(256) }),
        "idempotencyKey"
      )
      yield* EventInput.decodeEventRecord({ ...base, event: "e".repeat(128), idempotencyKey: "k".repeat(255) })
    }))

  it.effect("ts must be strict ISO 8601 with Z or an offset, and a real date-time", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      for (
        const ts of [
          "2026-05-10",
          "2026-05-10T10:00:00",
          "2026-05-10 10:00:00Z",
          "2026-02-30T10:00:00Z",
          "2026-05-10T24:00:00Z",
          "2026-05-10T10:00:60Z",
          "1715335200",
          "yesterday",
          "2026-05-10T10:00:00+0200"
        ]
      ) {
        assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, ts }), "ts", ts)
      }
      const ok = [
        "2026-05-10T10:00Z",
        "2026-05-10T10:00:00.123456Z",
        "2026-05-09T10:00:00-05:30",
        "2024-02-29T23:59:59Z"
      ]
      for (const ts of ok) yield* EventInput.decodeEventRecord({ ...base, ts })
      assert.strictEqual(
        EventInput.parseTimestamp("2026-05-10T10:00:00-05:30")?.toISOString(),
        "2026-05-10T15:30:00.000Z"
      )
    }))

  it.effect("a ts more than 5 minutes in the future is INVALID_BODY; up to 5 minutes ahead and any past ts are accepted", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const iso = (ms: number) => new Date(ms).toISOString()
      assert.include(
        yield* refused(EventInput.decodeEventRecord, { ...base, ts: iso(NOW + 5 * 60_000 + 1000) }),
        "future"
      )
      yield* EventInput.decodeEventRecord({ ...base, ts: iso(NOW + 5 * 60_000) })
      yield* EventInput.decodeEventRecord({ ...base, ts: "2019-01-01T00:00:00Z" })
      assert.include(
        yield* refused(EventInput.decodeCountAction, { userHash: "u", ts: iso(NOW + 3_600_000) }),
        "future"
      )
      assert.include(
        yield* refused(EventInput.decodeWebhookEvent, { event: "e", userHash: "u", ts: iso(NOW + 3_600_000) }),
        "future"
      )
    }))

  it.effect("tz must be a known IANA zone; offsets and unknown names are INVALID_BODY", () =>
    Effect.gen(function*() {
      for (const tz of ["Mars/Olympus", "+02:00", "GMT+2x", ""]) {
        assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, tz }), "tz", tz)
      }
      for (const tz of ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Apia"]) {
        yield* EventInput.decodeEventRecord({ ...base, tz })
      }
    }))

  it.effect("eventType must be one of the three types, source one of the five", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, eventType: "click" }), "eventType")
      assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, source: "zapier" }), "source")
      for (const eventType of ["streak_interaction", "widget_impression", "widget_interaction"]) {
        assert.strictEqual((yield* EventInput.decodeEventRecord({ ...base, eventType })).eventType, eventType)
      }
      for (const source of ["widget", "api", "webhook", "automation", "mcp"]) {
        yield* EventInput.decodeEventRecord({ ...base, source })
      }
    }))

  it.effect("meta, details, performance and consent must be objects; error a string or an object", () =>
    Effect.gen(function*() {
      for (const field of ["meta", "details", "performance", "consent"]) {
        assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, [field]: [1, 2] }), field)
        assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, [field]: "x" }), field)
      }
      assert.include(yield* refused(EventInput.decodeEventRecord, { ...base, error: 42 }), "error")
      yield* EventInput.decodeEventRecord({ ...base, error: { message: "x" } })
    }))

  it.effect("webhook body needs event and userHash; siteKey is optional; it is never a test action", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(EventInput.decodeWebhookEvent, { userHash: "u" }), "event")
      assert.include(yield* refused(EventInput.decodeWebhookEvent, { event: "e" }), "userHash")
      const action = yield* EventInput.decodeWebhookEvent({
        event: "e",
        userHash: "u",
        test: true,
        tz: "Asia/Tokyo",
        externalService: "zapier"
      })
      assert.isFalse(action.test)
      assert.isUndefined(action.siteKey)
      assert.strictEqual(action.tz, "Asia/Tokyo")
      assert.strictEqual(action.externalService, "zapier")
    }))

  it.effect("customer REST count-action needs userHash; test defaults to false and names no event", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(EventInput.decodeCountAction, { test: true }), "userHash")
      assert.include(yield* refused(EventInput.decodeCountAction, { userHash: "u", test: "yes" }), "test")
      const action = yield* EventInput.decodeCountAction({ userHash: "u", integrationId: "zap_1" })
      assert.isFalse(action.test)
      assert.isUndefined(action.event)
      assert.strictEqual(action.integrationId, "zap_1")
    }))

  it("isCleanText checks every string of a body nested deeper than the call stack", () => {
    const nest = (leaf: unknown, depth: number) => {
      let v: unknown = leaf
      for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { [`k${i}`]: v }
      return v
    }
    assert.isTrue(EventInput.isCleanText(nest("fine", 200_000)))
    assert.isFalse(EventInput.isCleanText(nest("bad\u0000", 200_000)))
    assert.isFalse(EventInput.isCleanText(nest({ ["\ud800"]: 1 }, 200_000)))
  })
})
