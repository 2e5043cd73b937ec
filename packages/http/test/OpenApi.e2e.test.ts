/**
 * The served `/openapi.json` as users meet it: it passes a third-party validator and Redocly's
 * recommended rules, says who may call each route and what it answers, and every route, walked
 * with requests that make it fail, answers only the statuses and codes it declares. (Every request
 * of every end-to-end test is checked the same way: support/Contract.ts.)
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { expect, layer } from "@effect/vitest"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import * as HttpErrors from "../src/HttpErrors.js"
import { ADMIN_TOKEN, admin, type Reply, request, tenant, layer as testServer } from "./support/TestServer.js"
import { signedInAs } from "./support/Accounts.js"

type Json = Record<string, any>

const packageVersion = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version as string

const document = Effect.map(request("/openapi.json"), (reply) => reply.body as Json)

const operations = (doc: Json) =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).map(([method, operation]) => ({ path, method, operation: operation as Json }))
  )

/** Every `anyOf`/`oneOf` in `value`, with where it is. */
const unions = (value: unknown, at = "#"): Array<{ at: string; members: Array<unknown> }> => {
  if (typeof value !== "object" || value === null) return []
  const here = ["anyOf", "oneOf"].flatMap((
    k
  ) => (Array.isArray((value as Json)[k]) ? [{ at: `${at}/${k}`, members: (value as Json)[k] }] : []))
  return [...here, ...Object.entries(value).flatMap(([k, v]) => unions(v, `${at}/${k}`))]
}

layer(testServer(), { timeout: 120_000 })("the OpenAPI document at /openapi.json", (it) => {
  it.effect("passes @apidevtools/swagger-parser's validation against the OpenAPI 3.1 schema", () =>
    Effect.gen(function*() {
      const doc = yield* document
      expect(doc.openapi).toBe("3.1.0")
      const validated = yield* Effect.promise(() => SwaggerParser.validate(structuredClone(doc) as any))
      expect(Object.keys(validated.paths ?? {}).length).toBeGreaterThan(30)
    }))

  it.effect("passes Redocly's recommended rules: no error and no warning", () =>
    Effect.gen(function*() {
      const doc = yield* document
      const problems = yield* Effect.promise(async () =>
        lintFromString({
          source: JSON.stringify(doc),
          absoluteRef: "openapi.json",
          config: await createConfig({ extends: ["recommended"] })
        })
      )
      const found = problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ""}: ${p.message}`)
      expect(found.filter((p) => p.startsWith("error"))).toEqual([])
      // A liveness or readiness probe has no client error to answer; declaring one would be untrue.
      expect(found).toEqual([])
    }))

  it.effect("info: titled Streaks API, versioned as the package, described with links", () =>
    Effect.gen(function*() {
      const { info } = yield* document
      expect(info.title).toBe("Streaks API")
      expect(info.version).toBe(packageVersion)
      expect(info.description).toMatch(/\]\(https:\/\//)
      expect(info.description).toContain("[/docs](/docs)")
    }))

  it.effect("cites nothing its reader cannot open: no section of an outside document, links absolute or served here", () =>
    Effect.gen(function*() {
      const text = JSON.stringify(yield* document)
      // A "§" only of a public standard (RFC 9110 §15), never of a document the user does not have.
      expect([...text.matchAll(/(.{0,40})§/g)].filter((m) => !/\bRFC\s?\d+\s*$/.test(m[1]!)).map((m) => m[0])).toEqual(
        []
      )
      expect(text).not.toMatch(/\bCONTRACT\b|\bspec\s*§/)
      // Markdown links: to the web, or to a path this server answers; a repository file is neither.
      const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!)
      expect(targets.length).toBeGreaterThan(0)
      for (const target of targets) {
        if (/^https?:\/\//.test(target)) continue
        expect(target, target).toMatch(/^\/[^.]*$|^\/openapi\.json$/)
        const reply = yield* request(target)
        expect(reply.status, target).toBe(200)
      }
      expect(text).not.toMatch(/\bdocs\/[\w-]+\.md\b/)
    }))

  it.effect("every operation has a summary, a description, a declared tag and only security schemes that exist", () =>
    Effect.gen(function*() {
      const doc = yield* document
      const tags = new Set((doc.tags as Array<Json>).map((t) => t.name))
      expect([...tags]).toEqual(["Public and ingest endpoints", "Admin API", "Customer REST API", "Health"])
      const schemes = Object.keys(doc.components.securitySchemes)
      expect(schemes.sort()).toEqual([
        "adminToken",
        "bearer",
        "identityToken",
        "serverToken",
        "session",
        "webhookSecret"
      ])
      for (const { method, operation, path } of operations(doc)) {
        const where = `${method.toUpperCase()} ${path}`
        expect({ where, summary: typeof operation.summary, description: typeof operation.description }).toEqual({
          where,
          summary: "string",
          description: "string"
        })
        for (const tag of operation.tags) {
          expect({ where, tag, declared: tags.has(tag) }).toEqual({ where, tag, declared: true })
        }
        for (const requirement of operation.security) {
          for (const scheme of Object.keys(requirement)) expect(schemes).toContain(scheme)
        }
      }
    }))

  it.effect("security per door: server token, webhook secret, admin token, bearer, and the identity token on state", () =>
    Effect.gen(function*() {
      const doc = yield* document
      const security = (path: string, method: string) => doc.paths[path][method].security
      expect(security("/v1/e", "post")).toEqual([{}, { serverToken: [] }])
      expect(security("/v1/server/e", "post")).toEqual([{ serverToken: [] }])
      expect(security("/v1/webhook/{siteKey}/e", "post")).toEqual([{ webhookSecret: [] }])
      expect(security("/v1/state", "get")).toEqual([{}, { serverToken: [] }, { identityToken: [] }, {
        serverToken: [],
        identityToken: []
      }])
      expect(security("/admin/workspaces", "post")).toEqual([{ adminToken: [] }])
      expect(security("/v1/api/me", "get")).toEqual([{ bearer: [] }, { session: [] }])
      expect(security("/v1/api/api-keys", "get")).toEqual([{ session: [] }])
      expect(security("/health", "get")).toEqual([])
    }))

  it.effect("errors: each status's body is {error, message?} (the policy route's 400 adds field?) with the enum of that route's codes; no decode-error body, no union twice the same", () =>
    Effect.gen(function*() {
      const doc = yield* document
      const text = JSON.stringify(doc)
      expect(text).not.toContain("HttpApiDecodeError")
      for (const { method, operation, path } of operations(doc)) {
        for (const [status, response] of Object.entries(operation.responses as Json)) {
          if (Number(status) < 400) continue
          const schema = response.content["application/json"].schema
          const codes: Array<HttpErrors.Code> = schema.properties.error.enum
          expect({ where: `${method} ${path} ${status}`, schema }).toEqual({
            where: `${method} ${path} ${status}`,
            schema: {
              type: "object",
              required: ["error"],
              properties: {
                error: { type: "string", enum: codes },
                message: expect.objectContaining({ type: "string" }),
                // The policy route's 400 names the field at fault too (docs/api.md).
                ...(method === "put" && path === "/v1/api/programs/{programId}/policy" && status === "400"
                  ? { field: expect.objectContaining({ type: "string" }) }
                  : {})
              },
              additionalProperties: false
            }
          })
          expect(new Set(codes).size).toBe(codes.length)
          for (const code of codes) {
            expect({ code, status: HttpErrors.codes[code].status }).toEqual({ code, status: Number(status) })
          }
        }
      }
      // `/health` answers only a URL that is not clean text; `/v1/state` only its own codes (no
      // WEBHOOK_SECRET_REQUIRED, no UNAUTHORIZED).
      expect(Object.keys(doc.paths["/health"].get.responses)).toEqual(["200", "400"])
      expect(doc.paths["/v1/state"].get.responses["401"].content["application/json"].schema.properties.error.enum)
        .toEqual([
          "SERVER_TOKEN_REQUIRED"
        ])
      for (const { at, members } of unions(doc)) {
        const distinct = new Set(members.map((m) => JSON.stringify(m)))
        expect({ at, duplicates: members.length - distinct.size }).toEqual({ at, duplicates: 0 })
      }
    }))

  it.effect("the ingest doors and state show request and response examples", () =>
    Effect.gen(function*() {
      const doc = yield* document
      for (const path of ["/v1/e", "/v1/server/e", "/v1/webhook/{siteKey}/e", "/v1/api/programs/{programId}/events"]) {
        const op = doc.paths[path].post
        expect(Object.keys(op.requestBody.content["application/json"].examples ?? {}).length, path).toBeGreaterThan(0)
        expect(Object.keys(op.responses["202"].content["application/json"].examples ?? {}).length, path)
          .toBeGreaterThan(0)
      }
      const state = doc.paths["/v1/state"].get
      expect(Object.keys(state.responses["200"].content["application/json"].examples)).toEqual(["streak"])
      expect(state.parameters.find((p: Json) => p.name === "siteKey").example).toMatch(/^site_/)
    }))

  it.effect("every route, walked with requests that must fail, answers a status and code it declares", () =>
    Effect.gen(function*() {
      const doc = yield* document
      const t = yield* tenant()
      const key = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "walk" })).body.key as string
      const session = yield* signedInAs(t.workspaceId, "owner")
      const walked = new Map<string, Array<string>>()
      const probe = (where: string, reply: Reply, status: number, code: string) => {
        // The reply already passed the document's contract (`request`); this says the probe hit what it aimed at.
        expect({ where, status: reply.status, body: reply.body }).toEqual({ where, status, body: { error: code } })
        walked.set(where, [...(walked.get(where) ?? []), `${status} ${code}`])
      }
      const padding = "x".repeat(70 * 1024)
      for (const { method, operation, path } of operations(doc)) {
        const where = `${method.toUpperCase()} ${path}`
        const params = operation.parameters as Array<Json>
        const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
          const schema = params.find((p) => p.name === name)?.schema ?? {}
          return schema.enum?.[0] ?? (name === "siteKey" ? t.siteKey : `unknown_${name}`)
        })
        const declared = (status: number, code: string) =>
          operation.responses[status]?.content["application/json"].schema.properties.error.enum.includes(code) === true
        const requirements: Array<Json> = operation.security
        const credentials: Record<string, string> = requirements.some((r) => "adminToken" in r)
          ? { "x-admin-token": ADMIN_TOKEN }
          : requirements.some((r) => "bearer" in r)
          ? { authorization: `Bearer ${key}` }
          : requirements.some((r) => "session" in r)
          ? { cookie: session.cookie, "x-csrf-token": session.csrfToken }
          : requirements.some((r) => "serverToken" in r)
          ? { "x-streak-server-token": t.serverToken }
          : requirements.some((r) => "webhookSecret" in r)
          ? { "x-streak-webhook-secret": t.webhookSecret }
          : {}
        const verb = method.toUpperCase()
        // A query parameter (read by the route or not) that is not UTF-8 after percent-decoding.
        probe(
          where,
          yield* request(`${url}?probe=%ED%A0%80`, { method: verb, headers: credentials }),
          400,
          "INVALID_BODY"
        )
        if (declared(401, "UNAUTHORIZED")) {
          probe(where, yield* request(url, { method: verb }), 401, "UNAUTHORIZED")
        }
        if (operation.requestBody !== undefined) {
          const json = { ...credentials, "content-type": "application/json" }
          probe(where, yield* request(url, { method: verb, headers: json, raw: "{oops" }), 400, "INVALID_BODY")
          probe(
            where,
            yield* request(url, { method: verb, headers: json, raw: JSON.stringify({ padding }) }),
            413,
            "PAYLOAD_TOO_LARGE"
          )
        }
        if (params.some((p) => p.in === "query" && p.required)) {
          probe(where, yield* request(url, { method: verb, headers: credentials }), 400, "INVALID_BODY")
        }
        const ids = params.filter((p) => p.in === "path" && p.schema.enum === undefined && p.name !== "siteKey")
        if (ids.length > 0) {
          // An id that is not clean text (U+0000) is refused before anything reads it.
          const unclean = ids.reduce((u, p) => u.replace(`unknown_${p.name}`, "bad%00id"), url)
          probe(where, yield* request(unclean, { method: verb, headers: credentials }), 400, "INVALID_BODY")
        }
        if (operation.requestBody === undefined && ids.length > 0 && declared(404, "NOT_FOUND")) {
          const query = new URLSearchParams(
            params.filter((p) => p.in === "query" && p.required).map((
              p
            ): [string, string] => [p.name, p.schema.enum?.[0] ?? "x"])
          )
          probe(where, yield* request(`${url}?${query}`, { method: verb, headers: credentials }), 404, "NOT_FOUND")
        }
      }
      // Every route that declares a client error was made to answer one.
      const failing = operations(doc)
        .filter(({ operation }) => Object.keys(operation.responses).some((s) => Number(s) >= 400 && Number(s) < 500))
        .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
      expect(failing.filter((where) => !walked.has(where))).toEqual([])
    }))
})
