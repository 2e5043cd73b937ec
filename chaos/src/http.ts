/** One HTTP exchange over node:http with a deadline: what the chaos clients and probes send. */
import { request } from "node:http"

export interface Reply {
  /** 0: no answer (connection refused or reset, or past the deadline). */
  readonly status: number
  readonly body: any
  readonly ms: number
  readonly error?: string
}

export const call = (
  port: number,
  method: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: unknown; readonly timeoutMs?: number } = {}
): Promise<Reply> =>
  new Promise((resolve) => {
    const started = performance.now()
    const text = options.body === undefined ? undefined : JSON.stringify(options.body)
    let settled = false
    const done = (reply: Omit<Reply, "ms">) => {
      if (settled) return
      settled = true
      resolve({ ...reply, ms: performance.now() - started })
    }
    const req = request({
      host: "127.0.0.1",
      port,
      method,
      path,
      agent: false,
      headers: {
        ...(text !== undefined
          ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) }
          : {}),
        ...options.headers
      }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8")
        let body: unknown = raw
        try {
          body = raw === "" ? undefined : JSON.parse(raw)
        } catch {
          // not JSON: kept as text
        }
        done({ status: res.statusCode ?? 0, body })
      })
      res.on("error", (e) => done({ status: 0, body: undefined, error: e.message }))
    })
    req.on("error", (e) => done({ status: 0, body: undefined, error: (e as NodeJS.ErrnoException).code ?? e.message }))
    req.setTimeout(options.timeoutMs ?? 10_000, () => {
      req.destroy()
      done({ status: 0, body: undefined, error: "timeout" })
    })
    req.end(text)
  })

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
