import { expect, layer } from "@effect/vitest"
import { Credentials } from "@streaks/core"
import { Effect } from "effect"
import {
  admin,
  browserEvent,
  daysAgo,
  getState,
  request,
  serverEvent,
  tenant,
  layer as testServer
} from "./support/TestServer.js"

const aliasToken = (
  secret: string,
  claims: { userHash: string; anonymousId: string; siteKey: string },
  expiresInSeconds?: number
) => Credentials.signAliasToken(secret, claims, expiresInSeconds === undefined ? undefined : { expiresInSeconds })

layer(testServer(), { timeout: 120_000 })("aliases over real HTTP", (it) => {
  it.effect("POST /admin/alias links an anonymous visitor: 204 no content", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const linked = yield* admin("/admin/alias", { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-1" })
      expect(linked.status).toBe(204)
      expect(linked.text).toBe("")
    }))

  it.effect("alias merge: anonymous progress shows under the member after /admin/alias", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      // The visitor kept a streak for two days before signing in; the member acted today.
      yield* browserEvent(t, { userHash: "anon-1", ts: daysAgo(2) })
      yield* browserEvent(t, { userHash: "anon-1", ts: daysAgo(1) })
      yield* serverEvent(t, { userHash: "member-1" })
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(1)

      const linked = yield* admin("/admin/alias", { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-1" })
      expect(linked.status).toBe(204)
      const member = (yield* getState(t, "member-1")).body
      expect(member.streak).toEqual({ mode: "continuous", current: 3, best: 3, todayDone: true, pending: false })
      // The merged streak reached the 3-day milestone.
      expect(member.milestones.map((m: any) => m.achieved)).toEqual([true, true])
      // The anonymous id now reads as the member.
      expect((yield* getState(t, "anon-1")).body.streak.current).toBe(3)
    }))

  it.effect("after a link, events sent with the anonymous id count for the member", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(1) })
      expect((yield* admin("/admin/alias", { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-1" })).status)
        .toBe(204)
      const sent = yield* browserEvent(t, { userHash: "anon-1" })
      expect(sent.body).toEqual({ ok: true, counted: true })
      expect((yield* getState(t, "member-1")).body.streak).toMatchObject({ current: 2, todayDone: true })
      // The same day through the member's own id is a duplicate.
      expect((yield* serverEvent(t, { userHash: "member-1" })).body).toEqual({
        ok: true,
        counted: true,
        duplicate: true
      })
    }))

  it.effect("linking the same pair again is a no-op 204", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* serverEvent(t, { userHash: "anon-1" })
      const body = { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-1" }
      expect((yield* admin("/admin/alias", body)).status).toBe(204)
      expect((yield* admin("/admin/alias", body)).status).toBe(204)
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(1)
    }))

  it.effect("ALIAS_CONFLICT: an anonymousId already linked to another member answers 409", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expect((yield* admin("/admin/alias", { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-1" })).status)
        .toBe(204)
      const conflict = yield* admin("/admin/alias", { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-2" })
      expect(conflict.status).toBe(409)
      expect(conflict.text).toBe(JSON.stringify({ error: "ALIAS_CONFLICT" }))
      // Through the token route too.
      const token = yield* aliasToken(t.signingSecret, {
        userHash: "member-2",
        anonymousId: "anon-1",
        siteKey: t.siteKey
      })
      const viaToken = yield* request("/v1/alias", { body: { siteKey: t.siteKey, token } })
      expect(viaToken.status).toBe(409)
      expect(viaToken.body).toEqual({ error: "ALIAS_CONFLICT" })
    }))

  it.effect("POST /admin/alias: 400 INVALID_BODY for missing fields, 400 INVALID_SITE_KEY for an unknown siteKey", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      for (
        const body of [
          { anonymousId: "anon-1", userHash: "member-1" },
          { siteKey: t.siteKey, userHash: "member-1" },
          { siteKey: t.siteKey, anonymousId: "anon-1" },
          { siteKey: t.siteKey, anonymousId: "", userHash: "member-1" },
          { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "jane@example.com" },
          { siteKey: t.siteKey, anonymousId: "a".repeat(257), userHash: "member-1" }
        ]
      ) {
        const reply = yield* admin("/admin/alias", body)
        expect({ body, status: reply.status, reply: reply.body }).toEqual({
          body,
          status: 400,
          reply: { error: "INVALID_BODY" }
        })
      }
      const unknown = yield* admin("/admin/alias", {
        siteKey: "site_unknown00000",
        anonymousId: "anon-1",
        userHash: "member-1"
      })
      expect(unknown.status).toBe(400)
      expect(unknown.body).toEqual({ error: "INVALID_SITE_KEY" })
    }))

  it.effect("POST /v1/alias with a token from Credentials.signAliasToken links and merges: 200 {ok:true}", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* browserEvent(t, { userHash: "anon-7", ts: daysAgo(1) })
      yield* serverEvent(t, { userHash: "member-7" })
      const token = yield* aliasToken(t.signingSecret, {
        userHash: "member-7",
        anonymousId: "anon-7",
        siteKey: t.siteKey
      })
      const reply = yield* request("/v1/alias", { body: { siteKey: t.siteKey, token } })
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ ok: true })
      expect((yield* getState(t, "member-7")).body.streak).toMatchObject({ current: 2, best: 2 })
      // The same token again: the pair exists, still fine.
      const again = yield* request("/v1/alias", { body: { siteKey: t.siteKey, token } })
      expect(again.status).toBe(200)
    }))

  it.effect("INVALID_ALIAS_TOKEN: a bad, foreign, expired or too long-lived token answers 401", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      const claims = { userHash: "member-1", anonymousId: "anon-1", siteKey: t.siteKey }
      const tokens = [
        "garbage",
        "",
        // Signed with another project's secret.
        yield* aliasToken(other.signingSecret, claims),
        // For another site.
        yield* aliasToken(t.signingSecret, { ...claims, siteKey: other.siteKey }),
        // Expired.
        yield* aliasToken(t.signingSecret, claims, -30),
        // Lifetime over 10 minutes.
        yield* aliasToken(t.signingSecret, claims, 3600),
        // An identity token is not an alias token (no anon claim).
        yield* Credentials.signIdentityToken(t.signingSecret, { userHash: "member-1", siteKey: t.siteKey })
      ]
      for (const token of tokens) {
        const reply = yield* request("/v1/alias", { body: { siteKey: t.siteKey, token } })
        expect({ token, status: reply.status, text: reply.text }).toEqual({
          token,
          status: 401,
          text: JSON.stringify({ error: "INVALID_ALIAS_TOKEN" })
        })
      }
      // Nothing got linked.
      const fine = yield* admin("/admin/alias", { siteKey: t.siteKey, anonymousId: "anon-1", userHash: "member-2" })
      expect(fine.status).toBe(204)
    }))

  it.effect("POST /v1/alias: an unknown siteKey is 400 INVALID_SITE_KEY, a missing token 400 INVALID_BODY", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const token = yield* aliasToken(t.signingSecret, { userHash: "m", anonymousId: "a", siteKey: t.siteKey })
      const unknown = yield* request("/v1/alias", { body: { siteKey: "site_unknown0000", token } })
      expect(unknown.status).toBe(400)
      expect(unknown.body).toEqual({ error: "INVALID_SITE_KEY" })
      const missing = yield* request("/v1/alias", { body: { siteKey: t.siteKey } })
      expect(missing.status).toBe(400)
      expect(missing.body).toEqual({ error: "INVALID_BODY" })
    }))
})
