/**
 * Webhook receivers on 127.0.0.1 as a customer would write them: each verifies the Standard
 * Webhooks signature of every delivery and deduplicates by `webhook-id`. A receiver can be down
 * (not listening), slow (answers after a delay), or answer 200 with a 1 GB body streamed at the
 * pace the client reads it.
 */
import { Signature } from "@streaks/webhooks"
import { Either } from "effect"
import { createServer, type Server } from "node:http"

export type Mode = "up" | "slow" | "huge"

const GB = 1024 * 1024 * 1024
const chunk = Buffer.alloc(64 * 1024, 120)

export class Receiver {
  /** Deliveries per `webhook-id` (more than one: a repeat the receiver deduplicates). */
  readonly seen = new Map<string, number>()
  /** `webhook-id` → the body's `data.userHash` and `type`, of the first delivery. */
  readonly events = new Map<string, { readonly userHash: string; readonly type: string }>()
  invalid = 0
  requests = 0
  /** Bytes of the 1 GB answers the receiver could write before the client closed the connection, largest. */
  largestHugeWrite = 0
  hugeAnswers = 0
  mode: Mode = "up"
  slowMs = 3_000
  secret = ""
  private server: Server | undefined

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`
  }

  /** Starts listening (the receiver is "down" until then and after `close`). */
  listen(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        this.requests++
        const body = Buffer.concat(chunks).toString("utf8")
        const checked = Signature.verify(this.secret, req.headers as Record<string, string>, body)
        if (Either.isLeft(checked)) {
          this.invalid++
          res.writeHead(400).end()
          return
        }
        const id = String(req.headers["webhook-id"])
        const event = checked.right as { readonly type: string; readonly data: { readonly userHash: string } }
        // Counted once the answer is sent: a delivery the dispatcher never saw answered is a retry.
        const record = () => {
          this.seen.set(id, (this.seen.get(id) ?? 0) + 1)
          if (!this.events.has(id)) this.events.set(id, { userHash: event.data.userHash, type: event.type })
        }
        if (this.mode === "slow") {
          setTimeout(() => res.writeHead(200).end("ok", record), this.slowMs)
          return
        }
        if (this.mode === "huge") {
          this.hugeAnswers++
          res.writeHead(200, { "content-type": "text/plain", "content-length": String(GB) })
          record()
          let written = 0
          let closed = false
          res.on("close", () => {
            closed = true
            this.largestHugeWrite = Math.max(this.largestHugeWrite, written)
          })
          const pump = () => {
            while (!closed && written < GB) {
              written += chunk.length
              if (!res.write(chunk)) return void res.once("drain", pump)
            }
            if (!closed) res.end()
          }
          pump()
          return
        }
        res.writeHead(200).end("ok", record)
      })
    })
    this.server = server
    return new Promise((resolve) => server.listen(this.port, "127.0.0.1", () => resolve()))
  }

  close(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server === undefined) return Promise.resolve()
    server.closeAllConnections()
    return new Promise((resolve) => server.close(() => resolve()))
  }

  /** Deliveries beyond the first of each `webhook-id`. */
  get repeats(): number {
    let n = 0
    for (const count of this.seen.values()) n += count - 1
    return n
  }
}
