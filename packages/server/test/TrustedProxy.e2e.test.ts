/**
 * The reference server behind a real reverse proxy (`http-proxy`), as
 * docs/operations.md#behind-a-proxy sets it up: the proxy connects from 127.0.0.2, the one trusted address
 * (`STREAKS_TRUSTED_PROXIES`), and appends each client's address to `X-Forwarded-For` (or writes
 * `Forwarded`). The client address it reports keys the limits (here the failed-authentication
 * budget, 3 a minute), while whatever a client writes in those headers itself (through the proxy
 * or straight to the server) is ignored. The scheme comes from the trusted proxy alone: the MCP
 * protected-resource document names `https`, and the session cookie carries `Secure`, only when the
 * proxy says so.
 */
import { expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, HashMap, Layer, Logger } from "effect"
import httpProxy from "http-proxy"
import { request as httpRequest, createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as ReferenceServer from "./support/ReferenceServer.js"

const PROXY_ADDRESS = "127.0.0.2"

/** The access log's lines (their annotations), as the server's logger receives them. */
const accessLines: Array<Record<string, unknown>> = []
const capture = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, message }) => {
    if (Array.isArray(message) && message[0] === "http request") {
      accessLines.push(Object.fromEntries(HashMap.toEntries(annotations)))
    }
  })
)

const server = ReferenceServer.layer({
  STREAKS_ADMIN_TOKEN: "proxy-test-admin-token",
  STREAKS_SECRET_KEY: "proxy-test-sealing-key",
  STREAKS_TRUSTED_PROXIES: `${PROXY_ADDRESS}, 10.0.0.0/8`,
  STREAKS_RATE_LIMIT_AUTH_FAILURES: "3",
  STREAKS_DIRECTORY_CACHE_TTL: "0 seconds",
  STREAKS_ACCESS_LOG: "true"
}).pipe(
  Layer.provide(capture),
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

interface Proxy {
  readonly port: number
  readonly close: () => Promise<void>
}

/**
 * A reverse proxy on 127.0.0.1 in front of `target`, connecting from 127.0.0.2. `xfwd` appends the
 * client's address to `X-Forwarded-For` (and `http` to `X-Forwarded-Proto`); `forwarded` instead
 * appends an RFC 7239 element with `proto=https`, as a TLS-terminating proxy would.
 */
const startProxy = (target: string, mode: "xfwd" | "forwarded"): Promise<Proxy> =>
  new Promise((resolve) => {
    const proxy = httpProxy.createProxyServer({
      target,
      xfwd: mode === "xfwd",
      localAddress: PROXY_ADDRESS
    })
    if (mode === "forwarded") {
      proxy.on("proxyReq", (proxyReq, req) => {
        const element = `for=${req.socket.remoteAddress};proto=https`
        const before = req.headers["forwarded"]
        proxyReq.setHeader("forwarded", before === undefined ? element : `${before}, ${element}`)
      })
    }
    const front: Server = createServer((req, res) => proxy.web(req, res))
    front.listen(0, "127.0.0.1", () =>
      resolve({
        port: (front.address() as AddressInfo).port,
        close: () => new Promise((done) => front.close(() => (proxy.close(), done())))
      }))
  })

interface Reply {
  readonly status: number
  readonly body: any
}

/** One request from `from` (a loopback address of its own) to 127.0.0.1:`port`. */
const send = (
  port: number,
  from: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body)
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      path,
      localAddress: from,
      method: text === undefined ? "GET" : "POST",
      agent: false,
      headers: { ...headers, ...(text !== undefined ? { "content-type": "application/json" } : {}) }
    }, (res) => {
      let data = ""
      res.setEncoding("utf8").on("data", (c: string) => (data += c)).on("end", () => {
        let parsed: unknown
        try {
          parsed = JSON.parse(data)
        } catch {
          parsed = data
        }
        resolve({ status: res.statusCode ?? 0, body: parsed })
      })
    })
    req.on("error", reject)
    req.end(text)
  })

const wrongAdmin = (port: number, from: string, headers: Record<string, string> = {}) =>
  send(port, from, "/admin/workspaces", { "x-admin-token": "wrong", ...headers }, { name: "w", plan: "starter" })

/** A project to send actions to, provisioned with the valid admin token. */
const project = async (port: number): Promise<string> => {
  const admin = { "x-admin-token": "proxy-test-admin-token" }
  const workspace = await send(port, "127.0.0.1", "/admin/workspaces", admin, { name: "w", plan: "starter" })
  const created = await send(port, "127.0.0.1", "/admin/projects", admin, {
    workspaceId: workspace.body.id,
    name: "p",
    allowedOrigins: []
  })
  return created.body.siteKey as string
}

/** The fast path's door too: a wrong server token on `/v1/server/e`. */
const wrongServerToken = (port: number, from: string, siteKey: string) =>
  send(port, from, "/v1/server/e", { "x-streak-server-token": "sst_wrong" }, { siteKey, userHash: "m", event: "e" })

/** A sign-in form posted from `from`: the answer's status and its `Set-Cookie` headers. */
const signIn = (port: number, from: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; cookies: ReadonlyArray<string> }>((resolve, reject) => {
    const text = new URLSearchParams(form).toString()
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      path: "/sign-in",
      localAddress: from,
      method: "POST",
      agent: false,
      headers: { ...headers, "content-type": "application/x-www-form-urlencoded" }
    }, (res) => {
      res.resume().on("end", () => {
        const set = res.headers["set-cookie"]
        resolve({ status: res.statusCode ?? 0, cookies: set ?? [] })
      })
    })
    req.on("error", reject)
    req.end(text)
  })

layer(server, { timeout: 120_000 })("behind a trusted reverse proxy", (it) => {
  it.scoped("the session cookie is Secure when the trusted proxy says the client came over https, never on a client's claim", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const tls = yield* Effect.promise(() => startProxy(url, "forwarded"))
      const plain = yield* Effect.promise(() => startProxy(url, "xfwd"))
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([tls.close(), plain.close()])))
      yield* Effect.promise(async () => {
        const admin = { "x-admin-token": "proxy-test-admin-token" }
        const workspace = await send(tls.port, "127.0.0.1", "/admin/workspaces", admin, { name: "w", plan: "starter" })
        const email = `secure.${Date.now()}@example.com`
        const password = "correct horse battery staple"
        const user = await send(tls.port, "127.0.0.1", "/admin/users", admin, {
          email,
          name: "Ada",
          workspaces: [{ workspaceId: workspace.body.id, role: "owner" }],
          password
        })
        expect(user.status).toBe(201)
        const session = (r: { cookies: ReadonlyArray<string> }) =>
          r.cookies.find((c) => c.startsWith("streaks_session="))
        const overTls = await signIn(tls.port, "127.0.0.9", { email, password })
        expect(overTls.status).toBe(303)
        expect(session(overTls)).toMatch(/; HttpOnly; SameSite=Lax; Secure$/)
        const claimed = await signIn(Number(new URL(url).port), "127.0.0.9", { email, password }, {
          "x-forwarded-proto": "https",
          forwarded: "proto=https"
        })
        expect(claimed.status).toBe(303)
        expect(session(claimed)).not.toMatch(/Secure/)
        const viaPlain = await signIn(plain.port, "127.0.0.9", { email, password }, { "x-forwarded-proto": "https" })
        expect(session(viaPlain)).not.toMatch(/Secure/)
      })
    }))

  it.scoped("the client is the address the trusted proxy reports; spoofed headers from a client are ignored", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const proxy = yield* Effect.promise(() => startProxy(url, "xfwd"))
      yield* Effect.addFinalizer(() => Effect.promise(proxy.close))
      const statuses = (replies: ReadonlyArray<Reply>) => replies.map((r) => r.status)
      yield* Effect.promise(async () => {
        const siteKey = await project(proxy.port)
        // Client 127.0.0.3 spends its own budget (3), whatever it writes in X-Forwarded-For.
        const spoofs = ["198.51.100.1", "198.51.100.2", "10.1.2.3", "198.51.100.4, 10.9.9.9"]
        const first = []
        for (const spoof of spoofs) first.push(await wrongAdmin(proxy.port, "127.0.0.3", { "x-forwarded-for": spoof }))
        expect(statuses(first)).toEqual([401, 401, 401, 429])
        expect((await wrongServerToken(proxy.port, "127.0.0.3", siteKey)).status).toBe(429)
        // Client 127.0.0.4, through the same proxy, is another client with a budget of its own.
        expect((await wrongAdmin(proxy.port, "127.0.0.4")).status).toBe(401)
        expect((await wrongServerToken(proxy.port, "127.0.0.4", siteKey)).body).toEqual({
          error: "SERVER_TOKEN_REQUIRED"
        })
        // Straight to the server from an untrusted peer, forwarding headers are not read at all:
        // naming 127.0.0.4 does not spend 127.0.0.4's budget, naming a fresh address does not escape 127.0.0.5's.
        const port = Number(new URL(url).port)
        const direct = []
        for (let i = 0; i < 4; i++) {
          direct.push(
            await wrongAdmin(port, "127.0.0.5", {
              "x-forwarded-for": `203.0.113.${i}`,
              forwarded: `for=203.0.113.${i}`
            })
          )
        }
        expect(statuses(direct)).toEqual([401, 401, 401, 429])
        expect((await wrongAdmin(proxy.port, "127.0.0.4")).status).toBe(401)
      })
    }))

  it.scoped("RFC 7239 Forwarded from the trusted proxy: its for= keys the limits, its proto= names the scheme", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const proxy = yield* Effect.promise(() => startProxy(url, "forwarded"))
      yield* Effect.addFinalizer(() => Effect.promise(proxy.close))
      yield* Effect.promise(async () => {
        const spoofed = { forwarded: "for=192.0.2.1;proto=http" }
        const replies = []
        for (let i = 0; i < 4; i++) replies.push(await wrongAdmin(proxy.port, "127.0.0.6", spoofed))
        expect(replies.map((r) => r.status)).toEqual([401, 401, 401, 429])
        expect((await wrongAdmin(proxy.port, "127.0.0.7", spoofed)).status).toBe(401)
        // The proxy terminates TLS (proto=https): absolute URLs say https.
        const meta = await send(proxy.port, "127.0.0.6", "/.well-known/oauth-protected-resource", {
          host: "streaks.example.com"
        })
        expect(meta.body.resource).toBe("https://streaks.example.com/mcp")
      })
    }))

  it.scoped("a scheme claimed by an untrusted client is ignored, through the proxy or straight to the server", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const proxy = yield* Effect.promise(() => startProxy(url, "xfwd"))
      yield* Effect.addFinalizer(() => Effect.promise(proxy.close))
      yield* Effect.promise(async () => {
        const claim = { "x-forwarded-proto": "https", host: "streaks.example.com" }
        // The proxy appends its own `http` to the client's claim: the trusted hop's word wins.
        const viaProxy = await send(proxy.port, "127.0.0.8", "/.well-known/oauth-protected-resource", claim)
        expect(viaProxy.body.resource).toBe("http://streaks.example.com/mcp")
        const direct = await send(Number(new URL(url).port), "127.0.0.8", "/.well-known/oauth-protected-resource", {
          ...claim,
          forwarded: "proto=https"
        })
        expect(direct.body.resource).toBe("http://streaks.example.com/mcp")
      })
    }))

  it.scoped("the access log names the client the trusted proxy reports, and the path without its query", () =>
    Effect.gen(function*() {
      const { url } = yield* NodeServer.NodeServer
      const proxy = yield* Effect.promise(() => startProxy(url, "xfwd"))
      yield* Effect.addFinalizer(() => Effect.promise(proxy.close))
      const before = accessLines.length
      yield* Effect.promise(async () => {
        await send(proxy.port, "127.0.0.9", "/health?secret=hunter2", { "x-forwarded-for": "198.51.100.9" })
        await send(Number(new URL(url).port), "127.0.0.10", "/nowhere", { "x-forwarded-for": "198.51.100.10" })
        await wrongAdmin(proxy.port, "127.0.0.11")
      })
      // The line is written once the connection closes after the answer.
      yield* Effect.promise(() => new Promise((done) => setTimeout(done, 200)))
      const lines = accessLines.slice(before).map(({ client, method, path, status }) => ({
        client,
        method,
        path,
        status
      }))
      expect(lines).toEqual(expect.arrayContaining([
        { client: "127.0.0.9", method: "GET", path: "/health", status: 200 },
        { client: "127.0.0.10", method: "GET", path: "/nowhere", status: 404 },
        { client: "127.0.0.11", method: "POST", path: "/admin/workspaces", status: 401 }
      ]))
      expect(JSON.stringify(accessLines)).not.toContain("hunter2")
      for (const line of accessLines.slice(before)) expect(typeof line["durationMs"]).toBe("number")
    }))
})
