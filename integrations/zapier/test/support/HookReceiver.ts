/**
 * What stands in for Zapier's hook catcher: an HTTP server on 127.0.0.1 whose URLs are the
 * `targetUrl`s handed to `performSubscribe`. It answers 200, verifies each delivery's Standard
 * Webhooks signature with the subscription's secret (the `standardwebhooks` package), and keeps
 * the raw request so a test hands it to the trigger's `perform` as Zapier would.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"

export interface Caught {
  readonly path: string
  readonly headers: Record<string, string>
  readonly content: string
  readonly verified: boolean
}

export interface HookReceiver {
  /** A fresh target URL. */
  readonly targetUrl: (name: string) => string
  /** The `whsec_…` secret of the subscription behind a target URL, once known. */
  readonly secrets: Map<string, string>
  readonly caught: Array<Caught>
  /** Resolves with the first `count` requests to `targetUrl`, or rejects after `ms`. */
  readonly next: (targetUrl: string, count?: number, ms?: number) => Promise<Array<Caught>>
  readonly close: () => Promise<void>
}

export const start = async (): Promise<HookReceiver> => {
  const caught: Array<Caught> = []
  const secrets = new Map<string, string>()
  let base = ""
  const server: Server = createServer((req, res) => {
    let content = ""
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => (content += chunk)).on("end", () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v)])
      )
      const secret = secrets.get(`${base}${req.url}`)
      let verified = false
      if (secret !== undefined) {
        try {
          new Webhook(secret).verify(content, {
            "webhook-id": headers["webhook-id"] ?? "",
            "webhook-timestamp": headers["webhook-timestamp"] ?? "",
            "webhook-signature": headers["webhook-signature"] ?? ""
          })
          verified = true
        } catch {
          verified = false
        }
      }
      caught.push({ path: req.url ?? "", headers, content, verified })
      res.writeHead(200, { "content-type": "application/json" }).end(`{"status":"success"}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const of = (targetUrl: string) => caught.filter((c) => `${base}${c.path}` === targetUrl)
  return {
    targetUrl: (name) => `${base}/hooks/catch/${name}`,
    secrets,
    caught,
    next: async (targetUrl, count = 1, ms = 15_000) => {
      const end = Date.now() + ms
      while (of(targetUrl).length < count) {
        if (Date.now() > end) {
          throw new Error(`${targetUrl}: ${of(targetUrl).length} of ${count} deliveries after ${ms} ms`)
        }
        await new Promise((r) => setTimeout(r, 25))
      }
      return of(targetUrl).slice(0, count)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** The bundle parts Zapier builds from a caught request for a REST hook's `perform`. */
export const hookBundle = (c: Caught) => ({
  cleanedRequest: JSON.parse(c.content) as unknown,
  rawRequest: {
    method: "POST" as const,
    headers: Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [`Http-${k}`, v])),
    content: c.content
  }
})
