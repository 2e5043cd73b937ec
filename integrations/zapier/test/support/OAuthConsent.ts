/**
 * What a user's browser does between Zapier's redirect to `/oauth/authorize` and Zapier's redirect
 * URI, over plain HTTP: sign in with the form, read the consent page's CSRF token, post "Allow"
 * with the workspaces to reach, and read the code off the 303 to the redirect URI. Also the PKCE
 * pair Zapier computes when `enablePkce` is on.
 */
import { createHash, randomBytes } from "node:crypto"

interface Answer {
  readonly status: number
  readonly location: string | null
  readonly text: string
  readonly setCookie: string | null
}

const send = async (url: string, init: { readonly form?: URLSearchParams; readonly cookie?: string } = {}) => {
  const response = await fetch(url, {
    method: init.form === undefined ? "GET" : "POST",
    redirect: "manual",
    headers: {
      ...(init.form !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      ...(init.cookie !== undefined ? { cookie: init.cookie } : {})
    },
    ...(init.form !== undefined ? { body: init.form.toString() } : {})
  })
  const answer: Answer = {
    status: response.status,
    location: response.headers.get("location"),
    text: await response.text(),
    setCookie: response.headers.get("set-cookie")
  }
  return answer
}

/** The session cookie (`name=value`) of a signed-in user. */
export const signIn = async (base: string, email: string, password: string): Promise<string> => {
  const answer = await send(`${base}/sign-in`, {
    form: new URLSearchParams({ email, password, return_to: "/console" })
  })
  const cookie = answer.setCookie?.split(";")[0]
  if (answer.status !== 303 || cookie === undefined) throw new Error(`sign-in failed: ${answer.status} ${answer.text}`)
  return cookie
}

/** A code verifier (RFC 7636, 43 characters) and its S256 challenge, as Zapier makes them. */
export const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

/** `url` with Zapier's PKCE parameters added, as Zapier does to the app's `authorizeUrl`. */
export const withChallenge = (url: string, challenge: string): string => {
  const u = new URL(url)
  u.searchParams.set("code_challenge", challenge)
  u.searchParams.set("code_challenge_method", "S256")
  return u.toString()
}

/** Where the server sent the browser back to, with its query parameters. */
export interface Redirect {
  readonly url: URL
  readonly params: Record<string, string>
}

/**
 * Opens `authorizeUrl` signed in (`cookie`), ticks `workspaceIds` and clicks Allow: the answer is
 * the redirect to the app's redirect URI, which carries `code`, `state` and `iss`.
 */
export const allow = async (
  authorizeUrl: string,
  options: { readonly cookie: string; readonly workspaceIds: ReadonlyArray<string> }
): Promise<Redirect> => {
  const page = await send(authorizeUrl, { cookie: options.cookie })
  const csrfToken = /name="csrfToken" value="([^"]+)"/.exec(page.text)?.[1]
  if (page.status !== 200 || csrfToken === undefined) throw new Error(`no consent page: ${page.status} ${page.text}`)
  const url = new URL(authorizeUrl)
  const form = new URLSearchParams(url.searchParams)
  form.set("csrfToken", csrfToken)
  form.set("decision", "allow")
  for (const id of options.workspaceIds) form.append("workspace", id)
  const allowed = await send(`${url.origin}${url.pathname}`, { form, cookie: options.cookie })
  if (allowed.status !== 303 || allowed.location === null) {
    throw new Error(`no redirect: ${allowed.status} ${allowed.text}`)
  }
  const back = new URL(allowed.location)
  return { url: back, params: Object.fromEntries(back.searchParams) }
}

/** `POST /oauth/revoke` (RFC 7009) with the client's credentials in the form. */
export const revoke = (base: string, token: string, client: { clientId: string; clientSecret: string }) =>
  send(`${base}/oauth/revoke`, {
    form: new URLSearchParams({ token, client_id: client.clientId, client_secret: client.clientSecret })
  })
