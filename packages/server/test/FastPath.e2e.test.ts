/**
 * The fast path end to end, on Postgres: every kind of request to the four public doors and their
 * CORS preflights (valid, duplicate, unauthenticated, malformed, oversize, unclean text, nested
 * deeper than the call stack) answers through the fast path exactly as through the HttpApi
 * handlers alone: the same status, body and headers. `@streaks/http`'s end-to-end tests hold
 * the HttpApi answers to the contract; this holds the fast path to them.
 */
import { expect, layer } from "@effect/vitest"
import { Credentials } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import { Effect } from "effect"
import * as FastPathServer from "./support/FastPathServer.js"

interface Sent {
  readonly method: "GET" | "POST" | "OPTIONS"
  readonly path: string
  readonly headers?: Record<string, string>
  /** A JSON body (stringified) or, as a string, the raw body. */
  readonly body?: unknown
}

interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: Record<string, string>
}

/** Headers of the connection and the moment, not of the answer. */
const transport = new Set(["date", "connection", "keep-alive", "transfer-encoding"])

const send = (url: string, sent: Sent, plain: boolean) =>
  Effect.promise(async (): Promise<Answer> => {
    const raw = typeof sent.body === "string"
      ? sent.body
      : sent.body === undefined
      ? undefined
      : JSON.stringify(sent.body)
    const response = await fetch(`${url}${sent.path}`, {
      method: sent.method,
      headers: {
        ...(raw !== undefined ? { "content-type": "application/json" } : {}),
        ...sent.headers,
        ...(plain ? { [FastPathServer.PLAIN]: "1" } : {})
      },
      ...(raw !== undefined ? { body: raw } : {})
    })
    const headers: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      if (!transport.has(name)) headers[name] = value
    })
    return { status: response.status, text: await response.text(), headers }
  })

const DAY_MS = 86_400_000
const deep = (depth: number, inner = "") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`

/**
 * The requests, for one tenant and a prefix that keeps each path's members apart (so that each
 * path meets the same stored state: first action, repeat, duplicate key, ...).
 */
const corpus = (
  t: FastPathServer.Tenant,
  identity: string,
  who: string
): ReadonlyArray<readonly [string, Sent]> => {
  const server = { "x-streak-server-token": t.serverToken }
  const action = (member: string, extra: Record<string, unknown> = {}) => ({
    siteKey: t.siteKey,
    event: t.eventKey,
    userHash: `${who}-${member}`,
    ...extra
  })
  const post = (path: string, body: unknown, headers: Record<string, string> = server): Sent => ({
    method: "POST",
    path,
    headers,
    body
  })
  const state = (query: Record<string, string>, headers: Record<string, string> = server): Sent => ({
    method: "GET",
    path: `/v1/state?${new URLSearchParams(query)}`,
    headers
  })
  const webhook = (segment: string, body: unknown, secret: string | undefined = t.webhookSecret): Sent => ({
    method: "POST",
    path: `/v1/webhook/${segment}/e`,
    headers: secret === undefined ? {} : { "x-streak-webhook-secret": secret },
    body
  })
  const preflight = (path: string, method: string): Sent => ({
    method: "OPTIONS",
    path,
    headers: { origin: FastPathServer.ORIGIN, "access-control-request-method": method }
  })
  const ago = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString()
  return [
    ["server: first action", post("/v1/server/e", action("a"))],
    ["server: same day again", post("/v1/server/e", action("a"))],
    ["server: an earlier day", post("/v1/server/e", action("a", { ts: ago(1) }))],
    ["server: idempotency key, first", post("/v1/server/e", action("b", { idempotencyKey: "k1" }))],
    ["server: idempotency key, replay", post("/v1/server/e", action("b", { idempotencyKey: "k1" }))],
    ["server: a test action", post("/v1/server/e", action("c", { test: true, tz: "Europe/Paris" }))],
    ["server: with analytics parts", post("/v1/server/e", action("d", { meta: { plan: "pro" }, details: { n: 1 } }))],
    [
      "server: an unknown deep field",
      post("/v1/server/e", `${JSON.stringify(action("e")).slice(0, -1)},"x":${deep(20_000)}}`)
    ],
    ["server: no token", post("/v1/server/e", action("f"), {})],
    ["server: a wrong token", post("/v1/server/e", action("f"), { "x-streak-server-token": "srv_wrong" })],
    ["server: an unknown siteKey", post("/v1/server/e", { ...action("f"), siteKey: "site_doesnotexist000000" })],
    ["server: not a siteKey", post("/v1/server/e", { ...action("f"), siteKey: "not-a-site-key" })],
    ["server: not JSON", post("/v1/server/e", "{oops")],
    ["server: a number", post("/v1/server/e", "12")],
    ["server: an array", post("/v1/server/e", "[]")],
    ["server: no member", post("/v1/server/e", { siteKey: t.siteKey, event: t.eventKey })],
    ["server: an e-mail as member", post("/v1/server/e", { ...action("f"), userHash: "jane@example.org" })],
    ["server: U+0000 in the member", post("/v1/server/e", action("f\u0000"))],
    ["server: an unpaired surrogate in a meta key", post("/v1/server/e", action("f", { meta: { ["k\ud800"]: 1 } }))],
    [
      "server: U+0000 deep in the body",
      post("/v1/server/e", `${JSON.stringify(action("f")).slice(0, -1)},"x":${deep(20_000, "\"\\u0000\"")}}`)
    ],
    ["server: meta over its limit", post("/v1/server/e", action("f", { meta: { s: "x".repeat(5000) } }))],
    [
      "server: meta nested deeper than the stack",
      post("/v1/server/e", `${JSON.stringify(action("f")).slice(0, -1)},"meta":{"d":${deep(30_000)}}}`)
    ],
    ["server: a body over 64 KiB", post("/v1/server/e", action("f", { pad: "x".repeat(70_000) }))],
    [
      "server: ts in the future",
      post("/v1/server/e", action("f", { ts: new Date(Date.now() + 3_600_000).toISOString() }))
    ],
    ["server: ts not a date", post("/v1/server/e", action("f", { ts: "soon" }))],
    ["server: an unknown time zone", post("/v1/server/e", action("f", { tz: "Mars/Base" }))],
    ["server: an event the program does not count", post("/v1/server/e", action("g", { event: "other_event" }))],
    ["server: event and kind disagree", post("/v1/server/e", action("g", { kind: "other_event" }))],
    ["browser: an allowed origin", post("/v1/e", action("h"), { origin: FastPathServer.ORIGIN })],
    ["browser: again", post("/v1/e", action("h"), { origin: FastPathServer.ORIGIN })],
    ["browser: another origin", post("/v1/e", action("i"), { origin: "https://evil.example" })],
    ["browser: no origin", post("/v1/e", action("i"), {})],
    ["browser: no origin, server token", post("/v1/e", action("i"))],
    ["browser: not JSON", post("/v1/e", "{", { origin: FastPathServer.ORIGIN })],
    ["state: the server token", state({ siteKey: t.siteKey, userHash: `${who}-a`, event: t.eventKey })],
    ["state: kind", state({ siteKey: t.siteKey, userHash: `${who}-a`, kind: t.eventKey })],
    ["state: a member never seen", state({ siteKey: t.siteKey, userHash: `${who}-z`, event: t.eventKey })],
    [
      "state: from an allowed origin",
      state({ siteKey: t.siteKey, userHash: `${who}-h`, event: t.eventKey }, { origin: FastPathServer.ORIGIN })
    ],
    [
      "state: an identity token in the query",
      state({ siteKey: t.siteKey, userHash: `${who}-h`, event: t.eventKey, identity }, {
        origin: FastPathServer.ORIGIN
      })
    ],
    ["state: no credential", state({ siteKey: t.siteKey, userHash: `${who}-a`, event: t.eventKey }, {})],
    [
      "state: another origin",
      state({ siteKey: t.siteKey, userHash: `${who}-a`, event: t.eventKey }, { origin: "https://evil.example" })
    ],
    ["state: no member", state({ siteKey: t.siteKey, event: t.eventKey })],
    ["state: a member id too long", state({ siteKey: t.siteKey, userHash: "x".repeat(300), event: t.eventKey })],
    ["state: an unknown siteKey", state({ siteKey: "site_doesnotexist000000", userHash: "m", event: t.eventKey })],
    ["state: an unknown event", state({ siteKey: t.siteKey, userHash: `${who}-a`, event: "other_event" })],
    ["state: U+0000 in the member", state({ siteKey: t.siteKey, userHash: "m\u0000", event: t.eventKey })],
    ["state: a malformed escape", {
      method: "GET",
      path: "/v1/state?siteKey=%E0%A4%A&userHash=m&event=e",
      headers: server
    }],
    [
      "webhook: the program's secret",
      post(`/v1/webhook/${t.siteKey}/e`, { event: t.eventKey, userHash: `${who}-j` }, {
        "x-streak-webhook-secret": t.webhookSecret
      })
    ],
    [
      "webhook: its siteKey in the body too",
      webhook(t.siteKey, { siteKey: t.siteKey, event: t.eventKey, userHash: `${who}-j` })
    ],
    [
      "webhook: another siteKey in the body",
      webhook(t.siteKey, { siteKey: "site_whatever", event: t.eventKey, userHash: `${who}-j` })
    ],
    ["webhook: a wrong secret", webhook(t.siteKey, { event: t.eventKey, userHash: `${who}-j` }, "whsec_wrong")],
    ["webhook: no secret", webhook(t.siteKey, { event: t.eventKey, userHash: `${who}-j` }, undefined)],
    ["webhook: an unknown siteKey", webhook("site_doesnotexist000000", { event: t.eventKey, userHash: "m" })],
    ["webhook: a malformed escape", webhook("%E0%A4%A", { event: t.eventKey, userHash: "m" })],
    ["webhook: a malformed escape after a prefix", webhook("site_%E0%A4%A", { event: t.eventKey, userHash: "m" })],
    ["webhook: U+0000 in the path", webhook("site_%00", { event: t.eventKey, userHash: "m" })],
    ["webhook: ts not a date", webhook(t.siteKey, { event: t.eventKey, userHash: "m", ts: "soon" })],
    ["webhook: not JSON", webhook(t.siteKey, "{")],
    [
      "webhook: an unknown deep field",
      webhook(t.siteKey, `{"event":"${t.eventKey}","userHash":"${who}-k","x":${deep(20_000)}}`)
    ],
    [
      "bounds: a server token over its 256 characters",
      post("/v1/server/e", action("a"), { "x-streak-server-token": "s".repeat(257) })
    ],
    [
      "bounds: an identity token over its 4096 characters",
      state({ siteKey: t.siteKey, userHash: `${who}-a`, event: t.eventKey }, {
        ...server,
        "x-streak-identity": "i".repeat(4097)
      })
    ],
    [
      "bounds: a state event over its 128 characters",
      state({ siteKey: t.siteKey, userHash: `${who}-a`, event: "e".repeat(129) })
    ],
    ["bounds: a webhook siteKey over its 64 characters", webhook("s".repeat(65), { event: t.eventKey, userHash: "m" })],
    ["hygiene: invalid UTF-8 in the state query", {
      method: "GET",
      path: `/v1/state?siteKey=${t.siteKey}&userHash=a%ED%A0%80&event=${t.eventKey}`,
      headers: server
    }],
    ["hygiene: a malformed escape in an unread query parameter", post("/v1/server/e?x=%G1", action("a"))],
    [
      "hygiene: U+0000 in the browser door's query",
      post("/v1/e?x=%00", action("a"), { origin: FastPathServer.ORIGIN })
    ],
    ["preflight: /v1/e", preflight("/v1/e", "POST")],
    ["preflight: /v1/state", preflight("/v1/state", "GET")],
    ["preflight: /v1/alias", preflight("/v1/alias", "POST")]
  ]
}

const withLimitsShape = (headers: Record<string, string>): Record<string, string> => {
  const shaped = { ...headers }
  if (shaped["ratelimit"] !== undefined) {
    shaped["ratelimit"] = /^"(address|site|failed-auth)";r=\d+;t=\d+$/.test(shaped["ratelimit"]) ? "r;t" : "malformed"
  }
  if (shaped["ratelimit-policy"] !== undefined) {
    shaped["ratelimit-policy"] = /^"(address|site|failed-auth)";q=\d+;w=\d+$/.test(shaped["ratelimit-policy"])
      ? "q;w"
      : "malformed"
  }
  return shaped
}

layer(FastPathServer.layer(), { timeout: 120_000 })("the fast path over real HTTP", (it) => {
  it.effect("answers every request to the public doors as the HttpApi handlers do: status, body and headers", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const t = yield* FastPathServer.tenant
      const answers = (who: "fast" | "plain") =>
        Effect.flatMap(
          Credentials.signIdentityToken(t.signingSecret, { siteKey: t.siteKey, userHash: `${who}-h` }),
          (identity) =>
            Effect.forEach(corpus(t, identity, who), ([name, sent]) =>
              Effect.map(send(url, sent, who === "plain"), (answer) => ({
                name,
                status: answer.status,
                // Both paths share the buckets, which refill between the two runs: which limit is
                // nearest, and how much of it is left, is a matter of timing; that both say it is not.
                headers: withLimitsShape(answer.headers),
                // Each path has its own members.
                text: answer.text.replaceAll(`${who}-`, "member-")
              })))
        )
      const fast = yield* answers("fast")
      const plain = yield* answers("plain")
      expect(fast).toEqual(plain)
      // The corpus reaches every kind of answer, not only refusals.
      const statuses = new Set(fast.map((a) => a.status))
      for (const status of [200, 202, 204, 400, 401, 403, 413]) expect(statuses).toContain(status)
    }))
})
