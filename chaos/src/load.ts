/**
 * Steady ingest with idempotency keys, as a careful client sends it: each action has its own key
 * and member, and is sent again (to the next replica) until it is acknowledged with a 2xx. An
 * acknowledged action must then be stored exactly once, whatever happened to the replicas.
 */
import { call, type Reply, sleep } from "./http.js"

export interface Sample {
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly error: string | undefined
}

export interface LoadOptions {
  /** The replicas' ports, asked each time (some may be down). */
  readonly ports: () => ReadonlyArray<number>
  readonly siteKey: string
  readonly serverToken: string
  readonly event: string
  readonly workers: number
  /** Prefix of keys and members, distinct per run. */
  readonly prefix: string
  /** Per request. */
  readonly timeoutMs: number
  /** Pause between actions of one worker. */
  readonly pauseMs?: number
}

export class Load {
  /** Idempotency keys answered 2xx. */
  readonly acked = new Set<string>()
  /** Keys sent at least once (acknowledged or not). */
  readonly tried = new Set<string>()
  readonly samples: Array<Sample> = []
  private running = false
  private next = 0
  private turn = 0
  private workers: Array<Promise<void>> = []

  constructor(private readonly options: LoadOptions) {}

  start(): void {
    this.running = true
    for (let w = 0; w < this.options.workers; w++) this.workers.push(this.worker())
  }

  /** Stops starting new actions; each worker still sees its current one acknowledged (or gives up after 60 s). */
  async stop(): Promise<void> {
    this.running = false
    await Promise.all(this.workers)
    this.workers = []
  }

  private send(port: number, key: string, member: string): Promise<Reply> {
    return call(port, "POST", "/v1/server/e", {
      headers: { "x-streak-server-token": this.options.serverToken },
      body: { siteKey: this.options.siteKey, userHash: member, event: this.options.event, idempotencyKey: key },
      timeoutMs: this.options.timeoutMs
    })
  }

  private async worker(): Promise<void> {
    while (this.running) {
      const seq = this.next++
      const key = `${this.options.prefix}-k${seq}`
      const member = `${this.options.prefix}-m${seq}`
      this.tried.add(key)
      let stoppedAt: number | undefined
      while (true) {
        const ports = this.options.ports()
        const port = ports[this.turn++ % ports.length]!
        const reply = await this.send(port, key, member)
        this.samples.push({ at: Date.now(), ms: reply.ms, status: reply.status, error: reply.error })
        if (reply.status >= 200 && reply.status < 300) {
          this.acked.add(key)
          break
        }
        if (!this.running) stoppedAt ??= Date.now()
        if (stoppedAt !== undefined && Date.now() - stoppedAt > 60_000) break
        await sleep(reply.status === 409 ? 1_000 : reply.status === 0 ? 50 : 200)
      }
      if (this.options.pauseMs !== undefined) await sleep(this.options.pauseMs)
    }
  }

  /** Samples taken in [from, to). */
  between(from: number, to: number): ReadonlyArray<Sample> {
    return this.samples.filter((s) => s.at >= from && s.at < to)
  }
}

/** Count of samples by status (0: no answer). */
export const byStatus = (samples: ReadonlyArray<Sample>): string => {
  const counts = new Map<number, number>()
  for (const s of samples) counts.set(s.status, (counts.get(s.status) ?? 0) + 1)
  return [...counts.entries()].sort(([a], [b]) => a - b).map(([k, v]) => `${k === 0 ? "none" : k}: ${v}`).join(", ")
}
