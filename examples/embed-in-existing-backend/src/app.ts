/**
 * An existing-style Hono backend with two streak routes. Routes are ordinary async handlers:
 * each runs an Effect program on the Streaks runtime (`runtime.runPromiseExit`) and turns the
 * outcome into a response. Typed failures map to statuses in one place (`httpError`).
 */
import type { Services } from "@streaks/core"
import { Cause, type Effect, Exit, Option } from "effect"
import { Hono } from "hono"
import type { Context } from "hono"
import type { ContentfulStatusCode } from "hono/utils/http-status"
import { type LessonCompleted, memberStreak, recordLesson, type StreaksRuntime, type Tenant } from "./Streaks.js"

type Env = { Variables: { userId: string } }

/**
 * Status and body of each failure the routes can meet. Core errors carry their error code
 * (`InvalidBody` → "INVALID_BODY"); `StorageError` has none: the database is down → 503.
 */
export const httpError = (error: unknown): { readonly status: ContentfulStatusCode; readonly code: string } => {
  const tag = (error as { readonly _tag?: unknown })?._tag
  const code = (error as { readonly code?: unknown })?.code
  switch (tag) {
    case "InvalidBody":
      return { status: 400, code: "INVALID_BODY" }
    case "NotFound":
      return { status: 404, code: "NOT_FOUND" }
    case "IdempotencyKeyInProgress":
      return { status: 409, code: "IDEMPOTENCY_KEY_IN_PROGRESS" }
    case "StorageError":
      return { status: 503, code: "SERVICE_UNAVAILABLE" }
    default:
      // InvalidSiteKey and the like mean this backend is misconfigured, not that the caller erred.
      return { status: 500, code: typeof code === "string" ? code : "INTERNAL" }
  }
}

/**
 * Runs `program` on the runtime and answers with `ok(value)`, or with the mapped error.
 * `runPromiseExit` never rejects, so there is no FiberFailure to unwrap: the typed failure is
 * right there in the Exit. (`runtime.runPromise` works too; it rejects with the failure wrapped.)
 */
const respond = async <A, E>(
  runtime: StreaksRuntime,
  c: Context<Env>,
  program: Effect.Effect<A, E, Services.Services>,
  ok: (value: A) => Response
): Promise<Response> => {
  const exit = await runtime.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return ok(exit.value)
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) {
    // A defect or an interruption: a bug or a shutdown, never the caller's fault.
    console.error(Cause.pretty(exit.cause))
    return c.json({ error: "INTERNAL" }, 500)
  }
  const { code, status } = httpError(failure.value)
  const message = (failure.value as { readonly message?: unknown }).message
  return c.json({ error: code, ...(typeof message === "string" && message !== "" ? { message } : {}) }, status)
}

export const makeApp = (runtime: StreaksRuntime, tenant: Tenant) => {
  const app = new Hono<Env>()

  app.get("/health", (c) => c.json({ ok: true }))

  // Stands in for the authentication this backend already has (session cookie, JWT...).
  app.use("/me/*", async (c, next) => {
    const userId = c.req.header("x-user-id")
    if (userId === undefined || userId === "") return c.json({ error: "UNAUTHORIZED" }, 401)
    c.set("userId", userId)
    await next()
  })

  // The existing route that marks a lesson done now also counts the day toward the streak.
  app.post("/me/lessons/:lessonId/complete", async (c) => {
    // The body is optional: `{ "tz": "Europe/Paris", "completedAt": "2024-05-01T09:30:00+02:00" }`.
    let body: Record<string, unknown> = {}
    const text = await c.req.text()
    if (text.trim() !== "") {
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return c.json({ error: "INVALID_BODY", message: "body: not JSON" }, 400)
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        return c.json({ error: "INVALID_BODY", message: "body: must be a JSON object" }, 400)
      }
      body = parsed as Record<string, unknown>
    }
    const { completedAt, tz } = body
    if (
      (tz !== undefined && typeof tz !== "string") || (completedAt !== undefined && typeof completedAt !== "string")
    ) {
      return c.json({ error: "INVALID_BODY", message: "tz and completedAt must be strings" }, 400)
    }
    // ... here the backend would store the lesson's completion in its own tables ...
    const input: LessonCompleted = {
      userId: c.get("userId"),
      tz,
      completedAt,
      idempotencyKey: c.req.header("idempotency-key")
    }
    const program = recordLesson(tenant, input)
    return respond(runtime, c, program, (answer) =>
      c.json({
        lessonId: c.req.param("lessonId"),
        counted: answer.counted === true,
        duplicate: answer.duplicate === true,
        ...(answer.reason === undefined ? {} : { reason: answer.reason })
      }, 201))
  })

  app.get("/me/streak", (c) => respond(runtime, c, memberStreak(tenant, c.get("userId")), (streak) => c.json(streak)))

  return app
}
