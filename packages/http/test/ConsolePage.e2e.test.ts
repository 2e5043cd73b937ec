/**
 * `/console` over real HTTP (docs/console.md): a browser without a session is sent to sign in and
 * back; a signed-in one gets the page with its session's CSRF token (the one `GET /v1/api/me`
 * answers) on `/console` and every path under it, held to its own origin by its
 * Content-Security-Policy; the app's files are served with an ETag (304 when it matches) to anyone.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as ConsolePage from "../src/ConsolePage.js"
import { raw, signedInAs } from "./support/Accounts.js"
import { request, tenant, layer as testServer } from "./support/TestServer.js"

const files = { script: "console.log(\"the console\")", style: "body{color:red}" }

layer(testServer({ routes: ConsolePage.layer(() => Promise.resolve(files)) }), { timeout: "120 seconds" })(
  "/console",
  (it) => {
    it.effect("without a session: 303 to the sign-in page, which comes back to the same path and query", () =>
      Effect.gen(function*() {
        for (const path of ["/console", "/console/programs/prg_x/members?userHash=a"]) {
          const answer = yield* raw(path)
          expect(answer.status).toBe(303)
          expect(answer.headers.get("location")).toBe(`/sign-in?return_to=${encodeURIComponent(path)}`)
        }
        // An ended or made-up session is no session.
        const forged = yield* raw("/console", { headers: { cookie: "streaks_session=sid_forged" } })
        expect(forged.status).toBe(303)
      }))

    it.effect("signed in: the page on every path, with the session's CSRF token and a same-origin policy", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const session = yield* signedInAs(t.workspaceId, "owner")
        const pages = []
        for (const path of ["/console", "/console/usage", "/console/programs/prg_x/policy"]) {
          pages.push(yield* raw(path, { headers: { cookie: session.cookie } }))
        }
        for (const page of pages) {
          expect(page.status).toBe(200)
          expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
          expect(page.headers.get("cache-control")).toBe("no-store")
          expect(page.headers.get("content-security-policy")).toContain("default-src 'self'")
          expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
          expect(page.text).toContain(`<meta name="csrf-token" content="${session.csrfToken}" />`)
          expect(page.text).toMatch(/<script type="module" src="\/console\/assets\/console\.js\?v=[\w-]+"><\/script>/)
          expect(page.text).not.toMatch(/https?:\/\//)
        }
        const me = yield* request("/v1/api/me", { headers: { cookie: session.cookie } })
        expect(me.body.csrfToken).toBe(session.csrfToken)
      }))

    it.effect("the app's files: their text with an ETag, 304 when it matches", () =>
      Effect.gen(function*() {
        const script = yield* raw("/console/assets/console.js")
        expect(script.status).toBe(200)
        expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
        expect(script.text).toBe(files.script)
        const etag = script.headers.get("etag")!
        expect(etag).toMatch(/^".+"$/)
        const again = yield* raw("/console/assets/console.js", { headers: { "if-none-match": etag } })
        expect(again.status).toBe(304)
        const style = yield* raw("/console/assets/console.css")
        expect(style.headers.get("content-type")).toBe("text/css; charset=utf-8")
        expect(style.text).toBe(files.style)
      }))
  }
)
