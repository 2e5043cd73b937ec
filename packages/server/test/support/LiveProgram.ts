/**
 * A live program with a streak policy, an API key and a receiver that verifies every delivery,
 * subscribed to the event types a test listens for: the start of the webhook end-to-end tests.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { call, receiver } from "./Receivers.js"

export const make = (
  base: string,
  adminToken: string,
  options: { readonly policy: Record<string, unknown>; readonly eventTypes: ReadonlyArray<string> }
) =>
  Effect.gen(function*() {
    const admin = (path: string, body: unknown) =>
      call(base, path, { method: "POST", headers: { "x-admin-token": adminToken }, body })
    const ws = yield* admin("/admin/workspaces", { name: "Acme", plan: "pro" })
    const project = yield* admin("/admin/projects", { workspaceId: ws.body.id, name: "App", allowedOrigins: [] })
    const program = yield* admin("/admin/programs", {
      projectId: project.body.id,
      name: "Lessons",
      eventKey: "lesson",
      milestones: [],
      policy: options.policy
    })
    expect(program.status).toBe(201)
    yield* admin(`/admin/programs/${program.body.id}/status`, { status: "live" })
    const key = yield* admin(`/admin/workspaces/${ws.body.id}/api-keys`, { name: "k" })
    const auth = { authorization: `Bearer ${key.body.key}` }
    let secret = ""
    const r = yield* receiver(() => secret)
    const hook = yield* call(base, "/v1/api/hooks", {
      headers: auth,
      body: { programId: program.body.id, url: r.url, eventTypes: options.eventTypes }
    })
    expect(hook.status).toBe(201)
    secret = hook.body.secret
    const programId = program.body.id as string
    /** Counts an action of `userHash` through the server door, with `extra` fields of the body. */
    const act = (userHash: string, extra: Record<string, unknown>) =>
      call(base, "/v1/server/e", {
        headers: { "x-streak-server-token": project.body.serverToken },
        body: { siteKey: project.body.siteKey, userHash, event: "lesson", ...extra }
      })
    /** The customer REST API under the program, with the key. */
    const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
      call(base, `/v1/api/programs/${programId}${path}`, { ...init, headers: auth })
    return { receiver: r, act, api, programId }
  })
