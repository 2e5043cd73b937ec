/**
 * Users and sessions for end-to-end tests: a user created through `POST /admin/users`, signed in
 * through the real `POST /sign-in` form, and requests that carry the session cookie (and its CSRF
 * token) the way a browser and the console do.
 */
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { NodeServer } from "../../src/NodeServer.js"
import { admin, type Reply, request } from "./TestServer.js"

export const PASSWORD = "correct horse battery staple"

/** A fresh e-mail address. */
export const freshEmail = () => `person.${randomBytes(5).toString("hex")}@example.com`

export interface RawReply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** A raw request to the test server that follows no redirect (pages answer 303). */
export const raw = (
  path: string,
  init: {
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly form?: Record<string, string>
  } = {}
): Effect.Effect<RawReply, never, NodeServer> =>
  Effect.flatMap(NodeServer, (server) =>
    Effect.promise(async () => {
      const response = await fetch(`${server.url}${path}`, {
        method: init.method ?? (init.form === undefined ? "GET" : "POST"),
        redirect: "manual",
        headers: {
          ...(init.form === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" }),
          ...init.headers
        },
        ...(init.form === undefined ? {} : { body: new URLSearchParams(init.form).toString() })
      })
      return { status: response.status, headers: response.headers, text: await response.text() }
    }))

/** The `name=value` of the session cookie a response sets, or undefined. */
export const sessionCookieOf = (headers: Headers): string | undefined => {
  const set = headers.getSetCookie().find((c) => c.startsWith("streaks_session="))
  const pair = set?.split(";")[0]
  return pair === undefined || pair === "streaks_session=" ? undefined : pair
}

export const createUser = (
  workspaces: ReadonlyArray<{ readonly workspaceId: string; readonly role: string }>,
  options: { readonly email?: string; readonly password?: string | null } = {}
) =>
  Effect.gen(function*() {
    const email = options.email ?? freshEmail()
    const password = options.password === undefined ? PASSWORD : options.password
    const created = yield* admin("/admin/users", {
      email,
      name: "Test person",
      workspaces,
      ...(password === null ? {} : { password })
    })
    if (created.status !== 201) return yield* Effect.dieMessage(`createUser: ${created.status} ${created.text}`)
    return { id: created.body.id as string, email, inviteUrl: created.body.inviteUrl as string | undefined }
  })

export interface Signed {
  readonly cookie: string
  readonly csrfToken: string
  readonly userId: string
  readonly email: string
}

/** Signs in through the form; the session's CSRF token is read from `GET /v1/api/me`. */
export const signIn = (email: string, password = PASSWORD) =>
  Effect.gen(function*() {
    const answer = yield* raw("/sign-in", { form: { email, password } })
    const cookie = sessionCookieOf(answer.headers)
    if (answer.status !== 303 || cookie === undefined) {
      return yield* Effect.dieMessage(`signIn: ${answer.status} ${answer.text.slice(0, 200)}`)
    }
    const me = yield* request("/v1/api/me", { headers: { cookie } })
    return {
      cookie,
      csrfToken: me.body?.csrfToken as string,
      userId: me.body?.credential?.userId as string,
      email
    } satisfies Signed
  })

/** A user with `role` in the workspace, signed in. */
export const signedInAs = (workspaceId: string, role: "owner" | "admin" | "viewer") =>
  Effect.flatMap(createUser([{ workspaceId, role }]), (user) => signIn(user.email))

/** A customer API request with the session: the cookie always, the CSRF token unless `csrf: false`. */
export const withSession = (
  session: Signed,
  path: string,
  init: { readonly method?: string; readonly body?: unknown; readonly csrf?: boolean | string } = {}
): Effect.Effect<Reply, never, NodeServer> =>
  request(`/v1/api${path}`, {
    headers: {
      cookie: session.cookie,
      ...(init.csrf === false
        ? {}
        : { "x-csrf-token": typeof init.csrf === "string" ? init.csrf : session.csrfToken })
    },
    ...(init.method === undefined ? {} : { method: init.method }),
    ...(init.body === undefined ? {} : { body: init.body })
  })
