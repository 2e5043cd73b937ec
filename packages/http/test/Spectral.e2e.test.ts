/**
 * The served `/openapi.json` under Spectral: the `oas` rules and the OWASP API Security ruleset,
 * as `openapi.spectral.mjs` (committed beside the package) sets them, with no error; and every
 * bound the document declares on a parameter is one the server enforces: one character over it
 * answers 400 `INVALID_BODY`.
 */
import { expect, layer } from "@effect/vitest"
import spectralCore from "@stoplight/spectral-core"
import spectralParsers from "@stoplight/spectral-parsers"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import ruleset from "../openapi.spectral.mjs"
import { NodeServer } from "../src/NodeServer.js"
import { ADMIN_TOKEN, admin, request, tenant, layer as testServer } from "./support/TestServer.js"
import { signedInAs } from "./support/Accounts.js"

type Json = Record<string, any>

const { Document, Ruleset, Spectral } = spectralCore
const rulesetPath = fileURLToPath(new URL("../openapi.spectral.mjs", import.meta.url))

const served = Effect.flatMap(
  NodeServer,
  (server) => Effect.promise(async () => (await (await fetch(`${server.url}/openapi.json`)).text()))
)

layer(testServer(), { timeout: 120_000 })("the served OpenAPI document under Spectral", (it) => {
  it.effect("spectral:oas and the OWASP API Security ruleset: no error", () =>
    Effect.gen(function*() {
      const text = yield* served
      const rules = new Ruleset(ruleset as any, { source: rulesetPath })
      const results = yield* Effect.promise(async () => {
        const spectral = new Spectral()
        spectral.setRuleset(rules)
        return spectral.run(
          new Document(text, spectralParsers.Json, fileURLToPath(new URL("../openapi.json", import.meta.url)))
        )
      })
      const errors = results.filter((r) => r.severity === 0).map((r) => `${r.code} ${r.path.join(".")}: ${r.message}`)
      expect(errors).toEqual([])
      // The OWASP rules and ours are among those that ran.
      const names = Object.keys(rules.rules)
      expect(names).toContain("owasp:api4:2023-integer-format")
      expect(names).toContain("owasp:api4:2023-rate-limit-retry-after")
      expect(names).toContain("streaks:request-string-limit")
    }))

  it.effect("a request that breaks a string bound the document declares on a parameter answers 400 INVALID_BODY", () =>
    Effect.gen(function*() {
      const doc = JSON.parse(yield* served) as Json
      const t = yield* tenant()
      const key = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "bounds" })).body.key as string
      const session = yield* signedInAs(t.workspaceId, "owner")
      let checked = 0
      for (const [path, item] of Object.entries(doc.paths as Json)) {
        for (const [method, op] of Object.entries(item as Json)) {
          const params = ((op as Json).parameters ?? []) as Array<Json>
          const security = JSON.stringify((op as Json).security ?? [])
          const credentials: Record<string, string> = security.includes("adminToken")
            ? { "x-admin-token": ADMIN_TOKEN }
            : security.includes("bearer")
            ? { authorization: `Bearer ${key}` }
            : security.includes("session")
            ? { cookie: session.cookie, "x-csrf-token": session.csrfToken }
            : { "x-streak-server-token": t.serverToken }
          for (const p of params) {
            const max = p.schema?.maxLength
            if (typeof max !== "number") continue
            const long = "a".repeat(max + 1)
            const filled = (name: string) => {
              if (name === p.name && p.in === "path") return long
              const schema = params.find((q) => q.name === name)?.schema ?? {}
              return schema.enum?.[0] ?? (name === "siteKey" ? t.siteKey : `x_${name}`)
            }
            const url = path.replace(/\{(\w+)\}/g, (_, name: string) => filled(name))
            const query = new URLSearchParams(
              params.filter((q) => q.in === "query" && (q.required || q.name === p.name)).map((q): [string, string] => [
                q.name,
                q.name === p.name ? long : q.schema.enum?.[0] ?? (q.name === "siteKey" ? t.siteKey : "x")
              ])
            )
            const headers = p.in === "header" ? { ...credentials, [p.name]: long } : credentials
            const hasBody = (op as Json).requestBody !== undefined
            const reply = yield* request(`${url}${query.size > 0 ? `?${query}` : ""}`, {
              method: method.toUpperCase(),
              headers: hasBody ? { ...headers, "content-type": "application/json" } : headers,
              ...(hasBody ? { raw: "{}" } : {})
            })
            expect({ at: `${method} ${path} ${p.in} ${p.name}`, status: reply.status, body: reply.body }).toEqual({
              at: `${method} ${path} ${p.in} ${p.name}`,
              status: 400,
              body: { error: "INVALID_BODY" }
            })
            checked++
          }
        }
      }
      expect(checked).toBeGreaterThan(30)
    }))
})
