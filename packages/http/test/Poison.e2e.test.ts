/**
 * Fault isolation over real HTTP on Postgres (docs/api.md#fault-isolation): concurrent actions
 * share transactions but never a fate. Poisoned actions among 200 valid ones are answered with
 * their own code, and every valid action is answered 202 and stored.
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { actionCounts, layer as testServer, request, serverEvent, tenant } from "./support/TestServer.js"

const STORAGE_POISON = "poison-storage"

layer(testServer(), { timeout: 120_000 })("a group shares a transaction, never a fate", (it) => {
  it.effect("200 concurrent valid actions with one poison of each kind: every valid one 202 and stored, each poison its code", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sql = yield* SqlClient.SqlClient
      // A storage failure for one key only: the database refuses that member's active days (a
      // check constraint, which a schema distributed on Citus takes as well as plain Postgres).
      yield* sql.unsafe(`ALTER TABLE streaks_activity_days
        ADD CONSTRAINT refuse_poison CHECK (user_hash <> '${STORAGE_POISON}')`)
      const poisons: ReadonlyArray<readonly [string, Record<string, unknown>, number, string]> = [
        ["ts in year 0001", { userHash: "p-ts", ts: "0001-01-01T00:00:00Z" }, 400, "INVALID_BODY"],
        ["ts before 1970", { userHash: "p-ts-1969", ts: "1969-12-31T23:59:59Z" }, 400, "INVALID_BODY"],
        ["NUL in userHash", { userHash: "p-nul\u0000" }, 400, "INVALID_BODY"],
        ["NUL in event", { userHash: "p-event", event: `${t.eventKey}\u0000` }, 400, "INVALID_BODY"],
        ["NUL in a meta value", { userHash: "p-meta", meta: { note: "a\u0000b" } }, 400, "INVALID_BODY"],
        ["NUL in a meta key", { userHash: "p-meta-key", meta: { "k\u0000": 1 } }, 400, "INVALID_BODY"],
        ["an unpaired surrogate in userHash", { userHash: "p-\ud800" }, 400, "INVALID_BODY"],
        [
          "an unpaired surrogate in a nested meta string",
          { userHash: "p-deep", meta: { a: [{ b: "\udc00" }] } },
          400,
          "INVALID_BODY"
        ],
        ["a storage failure of its key", { userHash: STORAGE_POISON }, 503, "SERVICE_UNAVAILABLE"]
      ]
      const valid = Array.from({ length: 200 }, (_, i) => ({ userHash: `member-${i}` }))
      const bodies = [...valid.slice(0, 100), ...poisons.map(([, body]) => body), ...valid.slice(100)]
      const replies = yield* Effect.forEach(bodies, (body) => serverEvent(t, body), { concurrency: "unbounded" })
      const byUser = new Map(bodies.map((b, i) => [b.userHash as string, replies[i]!]))
      for (const { userHash } of valid) {
        expect(byUser.get(userHash)!.status, userHash).toBe(202)
        expect(byUser.get(userHash)!.body, userHash).toEqual({ ok: true, counted: true })
      }
      for (const [name, body, status, code] of poisons) {
        const reply = byUser.get(body.userHash as string)!
        expect([reply.status, reply.body?.error], name).toEqual([status, code])
      }
      const counts = yield* actionCounts(t.programId, "live")
      expect([counts.counted, counts.total]).toEqual([200, 200])
      // Rejected text is refused on the read side too, with the same code.
      const state = yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=a%00b&event=${t.eventKey}`, {
        headers: { "x-streak-server-token": t.serverToken }
      })
      expect([state.status, state.body?.error]).toEqual([400, "INVALID_BODY"])
    }))
})
