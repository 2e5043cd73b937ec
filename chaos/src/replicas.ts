/**
 * Server replicas as the operator runs them: `streaks serve` (tsx on the sources) in a process of
 * its own, on 127.0.0.1, killed with SIGKILL and started again on the same port.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { call, sleep } from "./http.js"

const root = fileURLToPath(new URL("../..", import.meta.url))

export class Replica {
  private child: ChildProcess | undefined
  private output: Array<string> = []
  starts = 0
  kills = 0

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>
  ) {}

  get pid(): number | undefined {
    return this.child?.pid
  }

  /** Starts the process and waits until `/health` answers (at most `timeoutMs`). */
  async start(timeoutMs = 60_000): Promise<void> {
    this.output = []
    const child = spawn(process.execPath, ["--import", "tsx", "packages/server/src/bin.ts", "serve"], {
      cwd: root,
      env: { ...process.env, ...this.env, PORT: String(this.port), HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    this.child = child
    this.starts++
    const keep = (c: Buffer) => {
      this.output.push(c.toString("utf8"))
      if (this.output.length > 200) this.output.shift()
    }
    child.stdout!.on("data", keep)
    child.stderr!.on("data", keep)
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`${this.name} exited at start:\n${this.output.join("")}`)
      if ((await call(this.port, "GET", "/health", { timeoutMs: 1_000 })).status === 200) return
      await sleep(100)
    }
    throw new Error(`${this.name} did not come up in ${timeoutMs} ms:\n${this.output.join("")}`)
  }

  get up(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  /** SIGKILL: no graceful shutdown, no finalizer; resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.child
    if (child === undefined || !this.up) return
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    child.kill("SIGKILL")
    this.kills++
    await gone
  }

  /** SIGTERM, and waits for the exit. */
  async stop(): Promise<void> {
    const child = this.child
    if (child === undefined || !this.up) return
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    child.kill("SIGTERM")
    await Promise.race([gone, sleep(15_000).then(() => child.kill("SIGKILL"))])
    await gone
  }

  /** Resident memory of the process in MB (Linux `/proc`), or undefined. */
  rssMb(): number | undefined {
    const pid = this.pid
    if (pid === undefined || !this.up) return undefined
    try {
      const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
      return line === undefined ? undefined : Number(/\d+/.exec(line)![0]) / 1024
    } catch {
      return undefined
    }
  }

  log(): string {
    return this.output.join("")
  }
}
