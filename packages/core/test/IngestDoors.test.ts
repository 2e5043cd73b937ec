import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as Credentials from "../src/Credentials.js"
import type { UserHash } from "../src/Ids.js"
import { Ingest, originAllowed } from "../src/Ingest.js"
import { seedProgram, type Tenant } from "@streaks/storage-conformance/Fixtures"
import {
  api,
  at,
  browser,
  codeOf,
  daysOf,
  layer,
  logged,
  ORIGIN,
  rowOf,
  server,
  SERVER_TOKEN,
  tenant,
  webhook
} from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")

const body = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  siteKey: t.project.siteKey,
  userHash: "u1",
  event: t.program.eventKey,
  ...extra
})

describe("Ingest doors: errors and auth (docs/api.md#order-of-checks, docs/api.md#who-may-call)", () => {
  it.effect("an unknown or malformed siteKey is INVALID_SITE_KEY", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const ingest = yield* Ingest
      assert.strictEqual(yield* codeOf(ingest.resolveProject("site_unknown")), "INVALID_SITE_KEY")
      assert.strictEqual(yield* codeOf(ingest.resolveProject("not-a-site-key")), "INVALID_SITE_KEY")
      assert.strictEqual(yield* codeOf(server(body(t, { siteKey: "site_nope" }))), "INVALID_SITE_KEY")
      assert.strictEqual(yield* codeOf(webhook("site_nope", { event: "x", userHash: "u1" })), "INVALID_SITE_KEY")
    }).pipe(Effect.provide(layer)))

  it.effect("a browser Origin must be on the project's allowed list, else FORBIDDEN_ORIGIN", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      for (const origin of ["https://evil.example", "http://app.example.com", "https://app.example.com:8443", "null"]) {
        assert.strictEqual(yield* codeOf(browser(body(t), { origin })), "FORBIDDEN_ORIGIN", origin)
      }
      // A server token does not turn a foreign browser origin into an allowed one.
      assert.strictEqual(
        yield* codeOf(browser(body(t), { origin: "https://evil.example", serverToken: SERVER_TOKEN })),
        "FORBIDDEN_ORIGIN"
      )
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
      for (
        const origin of [ORIGIN, "https://APP.example.com:443", "https://shop.example.org", "https://a.b.example.org"]
      ) {
        yield* browser(body(t), { origin })
      }
    }).pipe(Effect.provide(layer)))

  it.effect("originAllowed: exact scheme, host and port; https://*.domain matches any subdomain but not the apex", () =>
    Effect.sync(() => {
      const allowed = ["https://app.example.com", "http://localhost:3000", "https://*.example.org"]
      const yes = [
        "https://app.example.com",
        "http://localhost:3000",
        "https://x.example.org",
        "https://x.y.example.org"
      ]
      const no = [
        "https://example.com",
        "https://app.example.com:444",
        "http://localhost:3001",
        "https://localhost:3000",
        "https://example.org",
        "http://x.example.org",
        "https://x.example.org:8443",
        "https://evilexample.org",
        "https://*.example.org",
        "null",
        ""
      ]
      for (const o of yes) assert.isTrue(originAllowed(o, allowed), o)
      for (const o of no) assert.isFalse(originAllowed(o, allowed), o)
    }))

  it.effect("a browser call without Origin needs the server token, else SERVER_TOKEN_REQUIRED", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      assert.strictEqual(yield* codeOf(browser(body(t), { origin: undefined })), "SERVER_TOKEN_REQUIRED")
      assert.strictEqual(
        yield* codeOf(browser(body(t), { origin: undefined, serverToken: "sst_wrong" })),
        "SERVER_TOKEN_REQUIRED"
      )
      const ok = yield* browser(body(t), { origin: undefined, serverToken: SERVER_TOKEN })
      assert.deepStrictEqual(ok, { body: { ok: true, counted: true }, deprecation: false })
    }).pipe(Effect.provide(layer)))

  it.effect("legacyNoOriginIngest lets a no-origin call through without a token and asks for a Deprecation header", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ project: { legacyNoOriginIngest: true } })
      yield* TestClock.setTime(NOON)
      const answer = yield* browser(body(t), { origin: undefined })
      assert.deepStrictEqual(answer, { body: { ok: true, counted: true }, deprecation: true })
      // With a valid token the call is not a legacy one; origins are still checked.
      assert.isFalse(
        (yield* browser(body(t, { userHash: "u2" }), { origin: undefined, serverToken: SERVER_TOKEN })).deprecation
      )
      assert.strictEqual(yield* codeOf(browser(body(t), { origin: "https://evil.example" })), "FORBIDDEN_ORIGIN")
    }).pipe(Effect.provide(layer)))

  it.effect("server ingest needs this project's server token, else SERVER_TOKEN_REQUIRED", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant({ project: { serverTokenHash: Credentials.hashToken("sst_other") } })
      yield* TestClock.setTime(NOON)
      assert.strictEqual(yield* codeOf(server(body(t), null)), "SERVER_TOKEN_REQUIRED")
      assert.strictEqual(yield* codeOf(server(body(t), "sst_other")), "SERVER_TOKEN_REQUIRED")
      yield* server(body(other), "sst_other")
      yield* server(body(t))
    }).pipe(Effect.provide(layer)))

  it.effect("webhook ingest: a missing or wrong secret, or an event no program counts, is WEBHOOK_SECRET_REQUIRED", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const second = yield* seedProgram(t, { webhookSecretHash: Credentials.hashToken("whi_second") })
      yield* TestClock.setTime(NOON)
      const send = (event: string, secret: string | null) =>
        codeOf(webhook(t.project.siteKey, { event, userHash: "u1" }, secret))
      assert.strictEqual(yield* send(t.program.eventKey, null), "WEBHOOK_SECRET_REQUIRED")
      assert.strictEqual(yield* send(t.program.eventKey, "whi_wrong"), "WEBHOOK_SECRET_REQUIRED")
      // A secret belongs to its program: the second program's secret does not count the first's event.
      assert.strictEqual(yield* send(t.program.eventKey, "whi_second"), "WEBHOOK_SECRET_REQUIRED")
      // Unknown event keys are not revealed: the same answer as a wrong secret.
      assert.strictEqual(yield* send("no_such_event", null), "WEBHOOK_SECRET_REQUIRED")
      assert.strictEqual(yield* send("no_such_event", "whi_second"), "WEBHOOK_SECRET_REQUIRED")
      assert.isUndefined(yield* rowOf(t, "u1", "test"))
      yield* webhook(t.project.siteKey, { event: second.eventKey, userHash: "u1" }, "whi_second")
      assert.deepStrictEqual(yield* daysOf(t, "u1", "test", second), ["2026-05-10"])
    }).pipe(Effect.provide(layer)))

  it.effect("webhook ingest: a body siteKey other than the URL's is SITE_KEY_MISMATCH, checked before the secret", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      const mismatch = { event: t.program.eventKey, userHash: "u1", siteKey: "site_other" }
      assert.strictEqual(yield* codeOf(webhook(t.project.siteKey, mismatch)), "SITE_KEY_MISMATCH")
      assert.strictEqual(yield* codeOf(webhook(t.project.siteKey, mismatch, null)), "SITE_KEY_MISMATCH")
      yield* webhook(t.project.siteKey, { ...mismatch, siteKey: t.project.siteKey })
    }).pipe(Effect.provide(layer)))

  it.effect("an event no program counts is INVALID_WIDGET_KIND (exact match), but only once the door's auth passed", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      assert.strictEqual(yield* codeOf(server(body(t, { event: "nope" }))), "INVALID_WIDGET_KIND")
      assert.strictEqual(
        yield* codeOf(browser(body(t, { event: t.program.eventKey.toUpperCase() }))),
        "INVALID_WIDGET_KIND"
      )
      assert.strictEqual(yield* codeOf(server(body(t, { event: "nope" }), "sst_wrong")), "SERVER_TOKEN_REQUIRED")
      assert.strictEqual(
        yield* codeOf(browser(body(t, { event: "nope" }), { origin: "https://evil.example" })),
        "FORBIDDEN_ORIGIN"
      )
    }).pipe(Effect.provide(layer)))

  it.effect("display-only projects log browser streak actions, answer BROWSER_COUNTING_DISABLED, and still count server ingest", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ project: { browserCounting: "display-only" }, program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const answer = yield* browser(body(t))
      assert.deepStrictEqual(answer.body, { ok: true, counted: false, reason: "BROWSER_COUNTING_DISABLED" })
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
      assert.strictEqual((yield* logged(t, "live"))[0]?.count, 1)
      assert.deepStrictEqual((yield* server(body(t))).body, { ok: true, counted: true })
      yield* webhook(t.project.siteKey, { event: t.program.eventKey, userHash: "u2" })
      assert.strictEqual((yield* rowOf(t, "u2", "live"))?.run, 1)
    }).pipe(Effect.provide(layer)))

  it.effect("a ts over 5 minutes ahead is INVALID_BODY even for an action built without the decode helpers", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      const ingest = yield* Ingest
      const code = yield* codeOf(ingest.record({
        project: t.project,
        action: {
          userHash: "u1" as UserHash,
          event: t.program.eventKey,
          eventType: "streak_interaction",
          ts: new Date(NOON + 6 * 60_000),
          test: false
        },
        auth: { door: "server", serverToken: SERVER_TOKEN }
      }))
      assert.strictEqual(code, "INVALID_BODY")
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
    }).pipe(Effect.provide(layer)))

  it.effect("a raw e-mail userHash is INVALID_BODY at every door", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const email = "jane@example.com"
      assert.strictEqual(yield* codeOf(browser(body(t, { userHash: email }))), "INVALID_BODY")
      assert.strictEqual(yield* codeOf(server(body(t, { userHash: email }))), "INVALID_BODY")
      assert.strictEqual(
        yield* codeOf(webhook(t.project.siteKey, { event: t.program.eventKey, userHash: email })),
        "INVALID_BODY"
      )
      assert.strictEqual(yield* codeOf(api(t, { userHash: email, test: true })), "INVALID_BODY")
    }).pipe(Effect.provide(layer)))

  it.effect("customer REST: a program of another project is NOT_FOUND", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      assert.strictEqual(yield* codeOf(api(t, { userHash: "u1", test: true }, other.program)), "NOT_FOUND")
    }).pipe(Effect.provide(layer)))
})
