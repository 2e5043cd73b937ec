/**
 * The pages of signing in (docs/accounts.md#sign-in): `GET/POST /sign-in`, `POST /sign-out`, and
 * `GET/POST /invite`, where an invited user sets a password. Plain HTML forms, no script; every
 * page is `no-store` and may not be framed.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Accounts } from "@streaks/core"
import { Effect, Option, Schema } from "effect"
import * as ClientAddress from "./ClientAddress.js"
import * as HttpErrors from "./HttpErrors.js"
import * as RateLimit from "./RateLimit.js"
import * as Sessions from "./Sessions.js"

const escape = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const pageHeaders = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
}

const layout = (title: string, body: string): string =>
  `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${escape(title)} · Streaks</title>
    <style>
      body { font: 16px/1.5 system-ui, sans-serif; max-width: 22rem; margin: 4rem auto; padding: 0 1rem; }
      label { display: block; margin-top: 1rem; }
      input { display: block; width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; }
      button { margin-top: 1.5rem; padding: .5rem 1rem; font: inherit; }
      [role=alert] { color: #a40000; }
    </style>
  </head>
  <body>
    <main>
${body}
    </main>
  </body>
</html>
`

const page = (status: number, title: string, body: string) =>
  HttpServerResponse.html(layout(title, body)).pipe(
    HttpServerResponse.setStatus(status),
    HttpServerResponse.setHeaders(pageHeaders)
  )

/** The one message of a refused sign-in: it never says whether the e-mail or the password was wrong. */
export const refusedMessage = "The e-mail address or password is not right, or there were too many attempts. " +
  "Check them and try again in a few minutes."

const signInPage = (status: number, returnTo: string, message?: string, email = "") =>
  page(
    status,
    "Sign in",
    `      <h1>Sign in</h1>
${
      message === undefined
        ? ""
        : `      <p role="alert">${escape(message)}</p>\n`
    }      <form method="post" action="/sign-in">
        <input type="hidden" name="return_to" value="${escape(returnTo)}" />
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required value="${escape(email)}" />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit">Sign in</button>
      </form>`
  )

const invitePage = (status: number, token: string, email: string, message?: string) =>
  page(
    status,
    "Set your password",
    `      <h1>Set your password</h1>
      <p>For ${escape(email)}. At least 12 characters.</p>
${
      message === undefined
        ? ""
        : `      <p role="alert">${escape(message)}</p>\n`
    }      <form method="post" action="/invite">
        <input type="hidden" name="token" value="${escape(token)}" />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required />
        <button type="submit">Set password</button>
      </form>`
  )

const inviteGone = page(
  404,
  "Invite",
  `      <h1>This invite link does not work</h1>
      <p>It was used already, it expired (links work for 72 hours), or it is not complete. Ask for a new one.</p>`
)

const redirect = (location: string, cookie?: string) =>
  HttpServerResponse.empty({
    status: 303,
    headers: { location, "cache-control": "no-store", ...(cookie === undefined ? {} : { "set-cookie": cookie }) }
  })

const SignInForm = Schema.Struct({
  email: Schema.String,
  password: Schema.String,
  return_to: Schema.optional(Schema.String)
})
const InviteForm = Schema.Struct({ token: Schema.String, password: Schema.String })
const SignOutForm = Schema.Struct({ csrfToken: Schema.optional(Schema.String) })

const queryParam = (name: string) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const value = new URL(request.url, "http://localhost").searchParams.get(name)
    return value ?? undefined
  })

const isUnauthorized = (e: { readonly _tag: string }) => e._tag === "Unauthorized"

/** The routes of the sign-in pages on the HttpApi router. */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    const sessions = yield* Sessions.Sessions
    const limiter = yield* RateLimit.RateLimiter

    /** Signs in and answers the redirect with the cookie; a refusal shows the page again. */
    const signIn = (email: string, password: string, destination: string) =>
      Effect.gen(function*() {
        const client = yield* ClientAddress.current
        const signedIn = yield* RateLimit.authenticating(
          limiter,
          client.address,
          accounts.signIn(email, password, client.address),
          isUnauthorized
        ).pipe(Effect.either)
        if (signedIn._tag === "Left") {
          const error = signedIn.left
          if (error._tag === "StorageError") return yield* error
          return signInPage(error._tag === "RateLimited" ? 429 : 401, destination, refusedMessage, email)
        }
        const { session, token } = signedIn.right
        const maxAge = Math.floor((session.expiresAt.getTime() - session.createdAt.getTime()) / 1000)
        return redirect(destination, Sessions.sessionCookie(token, client.scheme === "https", maxAge))
      })

    yield* router.get(
      "/sign-in",
      Effect.gen(function*() {
        const origin = yield* Sessions.originOf
        return signInPage(200, Sessions.returnTo(yield* queryParam("return_to"), origin))
      })
    )

    yield* router.post(
      "/sign-in",
      Effect.gen(function*() {
        const origin = yield* Sessions.originOf
        const form = yield* Effect.either(HttpServerRequest.schemaBodyUrlParams(SignInForm))
        if (form._tag === "Left") return signInPage(400, Sessions.defaultLanding, refusedMessage)
        return yield* signIn(form.right.email, form.right.password, Sessions.returnTo(form.right.return_to, origin))
      })
    )

    yield* router.post(
      "/sign-out",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const client = yield* ClientAddress.current
        const token = yield* Sessions.tokenOf
        const cleared = Sessions.clearedCookie(client.scheme === "https")
        if (Option.isNone(token)) return redirect("/sign-in", cleared)
        const signedIn = yield* sessions.ofToken(token.value)
        if (Option.isNone(signedIn)) return redirect("/sign-in", cleared)
        const form = yield* HttpServerRequest.schemaBodyUrlParams(SignOutForm).pipe(
          Effect.orElseSucceed(() => ({ csrfToken: undefined }))
        )
        const given = request.headers["x-csrf-token"] ?? form.csrfToken
        const allowed = yield* Effect.either(sessions.checkCsrf(signedIn.value, given))
        if (allowed._tag === "Left") return HttpErrors.errorResponse(403, "FORBIDDEN")
        yield* accounts.signOut(token.value, client.address)
        return redirect("/sign-in", cleared)
      })
    )

    yield* router.get(
      "/invite",
      Effect.gen(function*() {
        const token = yield* queryParam("token")
        if (token === undefined) return inviteGone
        const user = yield* accounts.invited(token)
        return Option.isNone(user) ? inviteGone : invitePage(200, token, user.value.email)
      })
    )

    yield* router.post(
      "/invite",
      Effect.gen(function*() {
        const client = yield* ClientAddress.current
        const form = yield* Effect.either(HttpServerRequest.schemaBodyUrlParams(InviteForm))
        if (form._tag === "Left") return inviteGone
        const { password, token } = form.right
        const accepted = yield* Effect.either(accounts.acceptInvite(token, password, client.address))
        if (accepted._tag === "Left") {
          const error = accepted.left
          if (error._tag === "StorageError") return yield* error
          if (error._tag === "NotFound") return inviteGone
          const user = yield* accounts.invited(token)
          return Option.isNone(user)
            ? inviteGone
            : invitePage(400, token, user.value.email, error.message ?? "That password cannot be used.")
        }
        return yield* signIn(accepted.right.email, password, Sessions.defaultLanding)
      })
    )
  })
)
