/**
 * Bodies of any content type over real HTTP: a JSON route answers a body it cannot take with 400
 * `INVALID_BODY` at once, whatever the declared type, with or without a length (chunked, empty or
 * not); a multipart body, which no route takes, too. None waits for a read that cannot end.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { NodeServer } from "../src/NodeServer.js"
import { ADMIN_TOKEN, layer as testServer } from "./support/TestServer.js"

/** A POST over node:http: `body` undefined sends an empty chunked body; a length is sent otherwise. */
const post = (base: string, path: string, headers: Record<string, string>, body: string | undefined) =>
  new Promise<{ status: number; text: string; ms: number }>((resolve) => {
    const started = Date.now()
    const url = new URL(base)
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: "POST",
      path,
      agent: false,
      headers: { ...headers, ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}) }
    }, (res) => {
      let text = ""
      res.on("data", (c) => (text += c)).on(
        "end",
        () => resolve({ status: res.statusCode ?? 0, text, ms: Date.now() - started })
      )
    })
    req.setTimeout(5_000, () => {
      req.destroy()
      resolve({ status: 0, text: "no answer", ms: Date.now() - started })
    })
    req.end(body)
  })

layer(testServer(), { timeout: 120_000 })("request bodies of any type over real HTTP", (it) => {
  it.effect("an admin route answers 400 INVALID_BODY for every content type it cannot read as JSON, chunked or not", () =>
    Effect.gen(function*() {
      const server = yield* NodeServer
      const types = [
        "application/octet-stream",
        "application/xml",
        "uR>r8q;i",
        "multipart/form-data; boundary=x",
        "multipart/form-data",
        "text/plain",
        "application/x-www-form-urlencoded"
      ]
      for (const type of types) {
        for (
          const body of [
            undefined,
            "",
            "c+g",
            "--x\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nW\r\n--x--\r\n"
          ]
        ) {
          const reply = yield* Effect.promise(() =>
            post(server.url, "/admin/workspaces", { "x-admin-token": ADMIN_TOKEN, "content-type": type }, body)
          )
          const what = `${type} ${JSON.stringify(body)}`
          assert.deepStrictEqual([reply.status, reply.text], [400, "{\"error\":\"INVALID_BODY\"}"], what)
          assert.isBelow(reply.ms, 2_000, what)
        }
      }
    }))

  it.effect("a form body is held to the text rules of a JSON one: U+0000 answers 400, never 5xx", () =>
    Effect.gen(function*() {
      const server = yield* NodeServer
      const form = { "x-admin-token": ADMIN_TOKEN, "content-type": "application/x-www-form-urlencoded" }
      for (const body of ["name=a%00b&plan=starter", "na%00me=a&plan=starter", "name=ok&plan=starter%00"]) {
        const reply = yield* Effect.promise(() => post(server.url, "/admin/workspaces", form, body))
        assert.deepStrictEqual([reply.status, reply.text], [400, "{\"error\":\"INVALID_BODY\"}"], body)
      }
    }))
})
