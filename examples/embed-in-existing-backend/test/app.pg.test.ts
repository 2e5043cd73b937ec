/**
 * The same routes on Postgres, as `main.ts` runs them: `PgStorage.layer()` on a fresh throwaway
 * database (`PgTest.layer`: a database on DATABASE_URL's server, or an embedded cluster).
 */
import { PgStorage } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Layer } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeApp } from "../src/app.js"
import { ensureTenant, makeRuntime, type Tenant } from "../src/Streaks.js"

const runtime = makeRuntime(PgStorage.layer().pipe(Layer.provide(PgTest.layer)))
let tenant: Tenant
let app: ReturnType<typeof makeApp>

beforeAll(async () => {
  tenant = await runtime.runPromise(ensureTenant(undefined))
  app = makeApp(runtime, tenant)
})
afterAll(() => runtime.dispose())

it("on Postgres: yesterday and today make a 2-day streak, and a saved tenant is reused", async () => {
  const headers = { "x-user-id": "member-42", "content-type": "application/json" }
  const yesterday = new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString()
  const first = await app.request("/me/lessons/intro/complete", {
    method: "POST",
    headers,
    body: JSON.stringify({ completedAt: yesterday })
  })
  expect(first.status).toBe(201)
  const second = await app.request("/me/lessons/basics/complete", { method: "POST", headers, body: JSON.stringify({}) })
  expect(await second.json()).toEqual({ lessonId: "basics", counted: true, duplicate: false })
  const streak = await app.request("/me/streak", { headers })
  expect(await streak.json()).toMatchObject({ current: 2, best: 2, todayDone: true, isLive: true })
  expect(await runtime.runPromise(ensureTenant(tenant))).toEqual(tenant)
})
