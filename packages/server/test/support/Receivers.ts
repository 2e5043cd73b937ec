/**
 * Helpers of the end-to-end webhook suites: a receiver on 127.0.0.1 that verifies every delivery
 * with the `standardwebhooks` npm package, and JSON calls to the server under test.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"

export interface Delivery {
  readonly id: string
  readonly type: string
  readonly body: any
  readonly at: number
}

export interface Receiver {
  readonly url: string
  readonly deliveries: Array<Delivery>
  readonly attempts: Array<string>
  readonly invalid: Array<string>
  readonly server: Server
}

/** A receiver that answers with `statuses` in turn (then 200) and verifies every signature. */
export const receiver = (secret: () => string, statuses: Array<number> = []) =>
  Effect.acquireRelease(
    Effect.async<Receiver>((resume) => {
      const deliveries: Array<Delivery> = []
      const attempts: Array<string> = []
      const invalid: Array<string> = []
      const server = createServer((req: IncomingMessage, res) => {
        let raw = ""
        req.on("data", (c) => (raw += c)).on("end", () => {
          const headers = {
            "webhook-id": String(req.headers["webhook-id"]),
            "webhook-timestamp": String(req.headers["webhook-timestamp"]),
            "webhook-signature": String(req.headers["webhook-signature"])
          }
          attempts.push(headers["webhook-id"])
          try {
            const body = new Webhook(secret()).verify(raw, headers) as any
            const status = statuses.shift() ?? 200
            if (status === 200) deliveries.push({ id: headers["webhook-id"], type: body.type, body, at: Date.now() })
            res.writeHead(status).end()
          } catch (e) {
            invalid.push(String(e))
            res.writeHead(400).end()
          }
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
          deliveries,
          attempts,
          invalid,
          server
        })))
    }),
    (r) =>
      Effect.sync(() => {
        r.server.closeAllConnections()
        r.server.close()
      })
  )

export const call = (
  base: string,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}
) =>
  Effect.promise(async () => {
    const r = await fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: { "content-type": "application/json", ...init.headers },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
    })
    const text = await r.text()
    return { status: r.status, body: text === "" ? undefined : JSON.parse(text) }
  })
