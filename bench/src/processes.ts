/**
 * The processes a bench run starts (the baseline, the servers measured) and the admin calls that
 * provision what they serve.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { resolve } from "node:path"

const root = resolve(import.meta.dirname, "../..")
export const ADMIN = "bench-admin-token"

export const start = (
  file: string,
  env: Record<string, string>,
  args: Array<string> = [],
  flags: Array<string> = []
): ChildProcess =>
  spawn(process.execPath, [...flags, ...(file.endsWith(".ts") ? ["--import", "tsx"] : []), file, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    // `BENCH_LOGS=1` shows the servers' output; otherwise it is dropped (an unread pipe would fill
    // up and stall a chatty child).
    stdio: process.env.BENCH_LOGS !== undefined ? ["ignore", "inherit", "inherit"] : "ignore"
  })

export const waitFor = async (url: string) => {
  for (let i = 0; i < 300; i++) {
    try {
      const r = await fetch(url)
      if (r.status < 500) return
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not come up`)
}

export const freePort = async (): Promise<number> => {
  const net = await import("node:net")
  return new Promise((ok) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as import("node:net").AddressInfo).port
      s.close(() => ok(port))
    })
  })
}

/** Where a server of the project listens, and its process. */
export interface Served {
  readonly url: string
  readonly pid?: number | undefined
}

export const admin = async (base: string, path: string, body?: unknown) => {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": ADMIN },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  })
  if (r.status >= 300) throw new Error(`${path}: ${r.status} ${await r.text()}`)
  return r.json() as Promise<any>
}
