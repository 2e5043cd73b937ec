/**
 * The consent flow over plain HTTP, as a browser would run it (for tests that need a consented
 * token but not a browser): sign in with the form, read the consent page's CSRF token, post
 * "Allow" with the workspaces to reach, exchange the code with PKCE S256.
 */
import { createHash, randomBytes } from "node:crypto"

export interface Answer {
  readonly status: number
  readonly location: string | null
  readonly text: string
  readonly setCookie: string | null
}

const call = async (
  url: string,
  init: { readonly method?: string; readonly form?: Record<string, string> | URLSearchParams; readonly cookie?: string }
): Promise<Answer> => {
  const response = await fetch(url, {
    method: init.method ?? (init.form === undefined ? "GET" : "POST"),
    redirect: "manual",
    headers: {
      ...(init.form !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      ...(init.cookie !== undefined ? { cookie: init.cookie } : {})
    },
    ...(init.form !== undefined ? { body: new URLSearchParams(init.form).toString() } : {})
  })
  return {
    status: response.status,
    location: response.headers.get("location"),
    text: await response.text(),
    setCookie: response.headers.get("set-cookie")
  }
}

/** The session cookie (`name=value`) of a signed-in user. */
export const signIn = async (base: string, email: string, password: string): Promise<string> => {
  const answer = await call(`${base}/sign-in`, { form: { email, password, return_to: "/console" } })
  const cookie = answer.setCookie?.split(";")[0]
  if (answer.status !== 303 || cookie === undefined) throw new Error(`sign-in failed: ${answer.status} ${answer.text}`)
  return cookie
}

/** A PKCE verifier and its S256 challenge. */
export const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

/** The hidden CSRF token of a consent page. */
export const csrfOf = (page: string): string | undefined => /name="csrfToken" value="([^"]+)"/.exec(page)?.[1]

export interface Consented {
  readonly code: string
  readonly verifier: string
  readonly accessToken: string
  readonly refreshToken: string
}

/**
 * Signs in, consents to `workspaceIds` for the client and exchanges the code (`client_secret_post`).
 */
export const consent = async (
  base: string,
  options: {
    readonly clientId: string
    readonly clientSecret: string
    readonly redirectUri: string
    readonly cookie: string
    readonly workspaceIds: ReadonlyArray<string>
  }
): Promise<Consented> => {
  const { challenge, verifier } = pkce()
  const params = {
    response_type: "code",
    client_id: options.clientId,
    redirect_uri: options.redirectUri,
    state: "s",
    code_challenge: challenge,
    code_challenge_method: "S256"
  }
  const page = await call(`${base}/oauth/authorize?${new URLSearchParams(params)}`, { cookie: options.cookie })
  const csrfToken = csrfOf(page.text)
  if (page.status !== 200 || csrfToken === undefined) throw new Error(`no consent page: ${page.status}`)
  const form = new URLSearchParams({ ...params, csrfToken, decision: "allow" })
  for (const id of options.workspaceIds) form.append("workspace", id)
  const allowed = await call(`${base}/oauth/authorize`, { form, cookie: options.cookie })
  const code = allowed.location === null ? null : new URL(allowed.location).searchParams.get("code")
  if (allowed.status !== 303 || code === null) throw new Error(`no code: ${allowed.status} ${allowed.location}`)
  const token = await call(`${base}/oauth/token`, {
    form: {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: options.redirectUri,
      client_id: options.clientId,
      client_secret: options.clientSecret
    }
  })
  const body = JSON.parse(token.text) as { access_token: string; refresh_token: string }
  if (token.status !== 200) throw new Error(`token: ${token.status} ${token.text}`)
  return { code, verifier, accessToken: body.access_token, refreshToken: body.refresh_token }
}

export { call }
