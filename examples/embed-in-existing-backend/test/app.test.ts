/**
 * The backend's routes, tested the way the rest of this backend is tested: requests straight into
 * the Hono app (`app.request`, no port), with Streaks on the in-memory adapter.
 */
import { Errors } from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { DirectoryStore } from "@streaks/core/Ports"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { httpError, makeApp } from "../src/app.js"
import { makeRuntime, provisionTenant, type StreaksRuntime, type Tenant } from "../src/Streaks.js"

const runtime = makeRuntime(MemoryStorage.layer)
let tenant: Tenant
let app: ReturnType<typeof makeApp>

beforeAll(async () => {
  tenant = await runtime.runPromise(provisionTenant)
  app = makeApp(runtime, tenant)
})
afterAll(() => runtime.dispose())

let users = 0
const newUser = () => `member-${++users}-${Date.now()}`

const complete = (userId: string, body?: unknown, headers: Record<string, string> = {}) =>
  app.request("/me/lessons/intro/complete", {
    method: "POST",
    headers: { "x-user-id": userId, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })

const streakOf = (userId: string, on: { request: typeof app.request } = app) =>
  on.request("/me/streak", { headers: { "x-user-id": userId } })

describe("recording lessons and reading the streak", () => {
  it("a completed lesson counts today and the streak route shows a 1-day streak", async () => {
    const user = newUser()
    const res = await complete(user)
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({ lessonId: "intro", counted: true, duplicate: false })
    const streak = await streakOf(user)
    expect(streak.status).toBe(200)
    expect(await streak.json()).toMatchObject({
      programId: tenant.programId,
      userHash: user,
      current: 1,
      best: 1,
      todayDone: true,
      pending: false,
      isLive: true
    })
  })

  it("a second lesson on the same day is a duplicate: still a 1-day streak", async () => {
    const user = newUser()
    await complete(user)
    const again = await complete(user)
    expect(await again.json()).toMatchObject({ counted: true, duplicate: true })
    expect(await (await streakOf(user)).json()).toMatchObject({ current: 1 })
  })

  it("yesterday and today make a 2-day streak", async () => {
    const user = newUser()
    const yesterday = new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString()
    expect((await complete(user, { completedAt: yesterday })).status).toBe(201)
    expect((await complete(user)).status).toBe(201)
    expect(await (await streakOf(user)).json()).toMatchObject({ current: 2, best: 2, todayDone: true })
  })

  it("a retry with the same Idempotency-Key replays the first answer", async () => {
    const user = newUser()
    const first = await complete(user, undefined, { "idempotency-key": "lesson-intro-1" })
    const retry = await complete(user, undefined, { "idempotency-key": "lesson-intro-1" })
    expect(await retry.json()).toEqual(await first.json())
    expect(await (await streakOf(user)).json()).toMatchObject({ current: 1 })
  })

  it("a member nobody has seen has an empty streak", async () => {
    expect(await (await streakOf(newUser())).json()).toMatchObject({ current: 0, best: 0, lastActiveDate: null })
  })
})

describe("errors become HTTP statuses", () => {
  it("no signed-in user: 401 from the backend's own auth, before Streaks is asked", async () => {
    const res = await app.request("/me/streak")
    expect(res.status).toBe(401)
  })

  it("an e-mail address as member id: 400 INVALID_BODY (ids must be opaque)", async () => {
    const res = await complete("ann@example.com")
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: "INVALID_BODY" })
  })

  it("a zone that is not an IANA name, or a time more than 5 minutes ahead: 400 INVALID_BODY naming the field", async () => {
    const badZone = await complete(newUser(), { tz: "+02:00" })
    expect(badZone.status).toBe(400)
    expect(await badZone.json()).toMatchObject({ error: "INVALID_BODY", message: expect.stringContaining("tz") })
    const future = await complete(newUser(), { completedAt: new Date(Date.now() + 60 * 60 * 1000).toISOString() })
    expect(future.status).toBe(400)
    expect(await future.json()).toMatchObject({ error: "INVALID_BODY", message: expect.stringContaining("ts") })
    const notJson = await complete(newUser(), "{oops")
    expect(notJson.status).toBe(400)
  })

  it("a program that does not exist: 404 NOT_FOUND", async () => {
    const misconfigured = makeApp(runtime, { ...tenant, programId: "prg_doesnotexist" })
    const res = await misconfigured.request("/me/lessons/intro/complete", {
      method: "POST",
      headers: { "x-user-id": "member-1" }
    })
    expect(res.status).toBe(404)
    expect((await streakOf("member-1", misconfigured)).status).toBe(404)
  })

  it("a storage failure: 503 SERVICE_UNAVAILABLE, never a 500 or a hang", async () => {
    // Same in-memory store, but every program lookup fails as a database that went away would.
    const down = () => Effect.fail(new Errors.StorageError({ message: "connection refused" }))
    const failing = Layer.effect(DirectoryStore, Effect.map(DirectoryStore, (real) => ({ ...real, program: down })))
    const brokenRuntime: StreaksRuntime = makeRuntime(Layer.provideMerge(failing, MemoryStorage.layer))
    try {
      const t = await brokenRuntime.runPromise(provisionTenant)
      const res = await streakOf("member-1", makeApp(brokenRuntime, t))
      expect(res.status).toBe(503)
      expect(await res.json()).toMatchObject({ error: "SERVICE_UNAVAILABLE" })
    } finally {
      await brokenRuntime.dispose()
    }
  })

  it("httpError maps each core error class to its status", () => {
    expect(httpError(new Errors.InvalidBody({}))).toEqual({ status: 400, code: "INVALID_BODY" })
    expect(httpError(new Errors.NotFound({}))).toEqual({ status: 404, code: "NOT_FOUND" })
    expect(httpError(new Errors.IdempotencyKeyInProgress({}))).toEqual({
      status: 409,
      code: "IDEMPOTENCY_KEY_IN_PROGRESS"
    })
    expect(httpError(new Errors.StorageError({ message: "down" }))).toEqual({
      status: 503,
      code: "SERVICE_UNAVAILABLE"
    })
    expect(httpError(new Errors.InvalidSiteKey({}))).toEqual({ status: 500, code: "INVALID_SITE_KEY" })
  })
})
