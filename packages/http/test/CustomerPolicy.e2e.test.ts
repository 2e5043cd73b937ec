/**
 * `PUT /v1/api/programs/{id}/policy` over real HTTP on Postgres (docs/api.md#put-programsprogramidpolicy):
 * a customer credential replaces a program's policy; a refusal names the field at fault and changes
 * nothing; a change is in the audit log; a viewer's session is refused; a program outside the credential's reach answers 404.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { signedInAs, withSession } from "./support/Accounts.js"
import { admin, request, tenant, layer as testServer } from "./support/TestServer.js"

const keyOf = (workspaceId: string) =>
  Effect.map(admin(`/admin/workspaces/${workspaceId}/api-keys`, { name: "policy" }), (r) => r.body.key as string)

const put = (key: string, programId: string, body: unknown) =>
  request(`/v1/api/programs/${programId}/policy`, {
    method: "PUT",
    headers: { authorization: `Bearer ${key}` },
    body
  })

layer(testServer(), { timeout: "120 seconds" })("PUT /v1/api/programs/{id}/policy", (it) => {
  it.effect("replaces the policy: the answer is the program with its new policy and mode", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const key = yield* keyOf(t.workspaceId)
      const answer = yield* put(key, t.programId, { cadence: "weekly", target: 3, freezes: { initial: 1, max: 2 } })
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({
        id: t.programId,
        mode: "weekly",
        policy: { cadence: "weekly", target: 3, freezes: { initial: 1, max: 2, earnEvery: 0 } },
        project: { id: t.projectId, siteKey: t.siteKey }
      })
      const listed = yield* request("/v1/api/programs", { headers: { authorization: `Bearer ${key}` } })
      expect(listed.body[0].policy).toEqual(answer.body.policy)
      // The change is in the audit log, with the key as its actor.
      const audit = yield* request("/v1/api/audit", { headers: { authorization: `Bearer ${key}` } })
      expect(audit.body.entries[0]).toMatchObject({
        action: "program.set_policy",
        target: t.programId,
        actor: { kind: "api_key" }
      })
    }))

  it.effect("an invalid policy answers 400 naming the field and what is wrong, and changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const key = yield* keyOf(t.workspaceId)
      const cases: Array<[unknown, string | undefined, string]> = [
        [{ freezes: { max: 99 } }, "freezes.max", "from 0 to 10"],
        [{ cadence: "weekly", target: 9 }, "target", "from 1 to 7 for a weekly cadence"],
        [{ cadence: "weekly", restDays: [6] }, "restDays", "daily cadence only"],
        [{ restDays: [8] }, "restDays", "ISO weekdays"],
        [{ freezes: { initial: 3, max: 1 } }, "freezes.initial", "must not exceed freezes.max"],
        [{ dayStartHour: "4" }, "dayStartHour", "Expected number"],
        [[1, 2], undefined, "policy must be an object"]
      ]
      for (const [body, field, message] of cases) {
        const answer = yield* put(key, t.programId, body)
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body.error).toBe("INVALID_BODY")
        expect(answer.body.field, JSON.stringify(body)).toBe(field)
        expect(answer.body.message).toContain(message)
      }
      const listed = yield* request("/v1/api/programs", { headers: { authorization: `Bearer ${key}` } })
      expect(listed.body[0].policy.cadence).toBe("daily")
      expect(listed.body[0].policy.freezes.max).toBe(0)
    }))

  it.effect("with a session: an admin's write needs the CSRF token; a viewer's is refused 403", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const adminUser = yield* signedInAs(t.workspaceId, "admin")
      const viewer = yield* signedInAs(t.workspaceId, "viewer")
      const body = { cadence: "monthly", target: 10 }
      const path = `/programs/${t.programId}/policy`
      expect((yield* withSession(adminUser, path, { method: "PUT", body, csrf: false })).status).toBe(403)
      expect((yield* withSession(viewer, path, { method: "PUT", body })).status).toBe(403)
      const done = yield* withSession(adminUser, path, { method: "PUT", body })
      expect(done.status).toBe(200)
      expect(done.body.mode).toBe("monthly")
    }))

  it.effect("a program outside the credential's reach answers 404", () =>
    Effect.gen(function*() {
      const mine = yield* tenant()
      const theirs = yield* tenant()
      const key = yield* keyOf(mine.workspaceId)
      const answer = yield* put(key, theirs.programId, { cadence: "weekly" })
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ error: "NOT_FOUND" })
    }))
})
