/**
 * The bench's load generators: wrk when it is on the PATH (a C program, cheap per request), else
 * autocannon from npm (in the bench's own process). Both send the same traffic: a request template
 * with a random member and program filled in per request.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Autocannon from "autocannon"

/**
 * What each request sends; `{member}` and `{event}` in `path` and `body` are drawn per request, and
 * `{key}` in `body` is a key no other request of the bench sends (an idempotency key).
 */
export interface Traffic {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: string
  readonly headers: Record<string, string>
  /** Members `m0` … and events `e0` … to draw from. */
  readonly members: number
  readonly events: number
}

export interface Outcome {
  readonly requests: number
  readonly rps: number
  /** Seconds the run lasted, by the generator's own clock. */
  readonly seconds: number
  /** Latency percentiles, milliseconds. */
  readonly p50: number
  readonly p99: number
  /**
   * Every latency seen, as microseconds and how many requests took that long (wrk only): so that
   * the slices of an interleaved run add up to one distribution.
   */
  readonly latencies?: ReadonlyArray<readonly [number, number]>
  /** Failed connections, reads, writes and timeouts. */
  readonly errors: number
  readonly non2xx: number
  /** CPU seconds the generator itself used. */
  readonly cpuSeconds: number
}

export interface Generator {
  readonly name: string
  readonly run: (
    url: string,
    traffic: Traffic,
    options: { readonly connections: number; readonly seconds: number }
  ) => Promise<Outcome>
}

const rand = (n: number) => Math.floor(Math.random() * n)

// Each generator run's keys start with a random prefix, so that no two runs send the same key.
let sent = 0
const prefix = () => rand(2 ** 31).toString(36)
let runPrefix = prefix()

/** One request's path and body, with one member and one event drawn for both. */
const draw = (traffic: Traffic) => {
  const member = `m${rand(traffic.members)}`
  const event = `e${rand(traffic.events)}`
  const key = `${runPrefix}-${++sent}`
  const fill = (template: string) =>
    template.replace("{member}", member).replace("{event}", event).replace("{key}", key)
  return { path: fill(traffic.path), ...(traffic.body !== undefined ? { body: fill(traffic.body) } : {}) }
}

export const autocannon: Generator = {
  name: "autocannon",
  run: async (url, traffic, { connections, seconds }) => {
    const before = process.cpuUsage()
    const started = performance.now()
    runPrefix = prefix()
    const r: any = await Autocannon({
      url,
      connections,
      duration: seconds,
      requests: [{
        setupRequest: (req: any) => ({ ...req, method: traffic.method, headers: traffic.headers, ...draw(traffic) })
      }]
    } as any)
    const cpu = process.cpuUsage(before)
    return {
      requests: r.requests.total,
      rps: Math.round(r.requests.average),
      seconds: (performance.now() - started) / 1000,
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.errors + r.timeouts,
      non2xx: r.non2xx,
      cpuSeconds: (cpu.user + cpu.system) / 1e6
    }
  }
}

/** A Lua string that needs no escaping (the templates hold no `]==]`). */
const luaString = (s: string) => {
  if (s.includes("]==]")) throw new Error(`cannot quote for wrk: ${s}`)
  return `[==[${s}]==]`
}

/**
 * The wrk script: draws the member and event per request as autocannon's side does, and prints
 * the figures as one JSON line when the run is done, with every latency seen and its count.
 */
const script = (traffic: Traffic) => `
math.randomseed(${rand(2 ** 31)})
local method, path, body = ${luaString(traffic.method)}, ${luaString(traffic.path)}, ${
  traffic.body === undefined ? "nil" : luaString(traffic.body)
}
local headers = {}
${Object.entries(traffic.headers).map(([k, v]) => `headers[ ${luaString(k)} ] = ${luaString(v)}`).join("\n")}
local prefix, sent = ${luaString(prefix())}, 0
request = function()
  local m = "m" .. math.random(0, ${traffic.members - 1})
  local e = "e" .. math.random(0, ${traffic.events - 1})
  sent = sent + 1
  local p = path:gsub("{member}", m, 1):gsub("{event}", e, 1)
  local b = body and body:gsub("{member}", m, 1):gsub("{event}", e, 1):gsub("{key}", prefix .. "-" .. sent, 1)
  return wrk.format(method, p, headers, b)
end
done = function(summary, latency, requests)
  local e = summary.errors
  local seen = {}
  for i = 1, #latency do
    local micros, count = latency(i)
    seen[i] = string.format("[%d,%d]", micros, count)
  end
  io.write(string.format('\\nRESULT {"requests":%d,"micros":%d,"p50":%d,"p99":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"latencies":[%s]}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect, e.read, e.write, e.status, e.timeout,
    table.concat(seen, ",")))
end
`

export const wrk: Generator = {
  name: "wrk",
  run: async (url, traffic, { connections, seconds }) => {
    const dir = mkdtempSync(join(tmpdir(), "streaks-wrk-"))
    try {
      const file = join(dir, "traffic.lua")
      writeFileSync(file, script(traffic))
      // One thread is plenty for 50 connections at these rates, and leaves the second core to the
      // servers. The shell reads its own children's CPU time (wrk's, once waited for) from /proc.
      const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s", file, url]
      const output = await new Promise<string>((ok, fail) => {
        const child = spawn("sh", [
          "-c",
          "wrk \"$@\" || exit $?; read -r stat < /proc/$$/stat; echo \"STAT $stat\"",
          "sh",
          ...args
        ], {
          stdio: ["ignore", "pipe", "inherit"]
        })
        let out = ""
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
        child.on("error", fail)
        child.on("exit", (code) => code === 0 ? ok(out) : fail(new Error(`wrk exited with ${code}: ${out}`)))
      })
      const result = JSON.parse(/^RESULT (.*)$/m.exec(output)?.[1] ?? "null")
      const stat = /^STAT .*\) (.*)$/m.exec(output)?.[1]?.split(" ")
      if (result === null || stat === undefined) throw new Error(`unexpected wrk output: ${output}`)
      return {
        requests: result.requests,
        rps: Math.round(result.requests / (result.micros / 1e6)),
        seconds: result.micros / 1e6,
        p50: Math.round(result.p50 / 100) / 10,
        p99: Math.round(result.p99 / 100) / 10,
        latencies: result.latencies,
        errors: result.connect + result.read + result.write + result.timeout,
        non2xx: result.status,
        // cutime + cstime, in clock ticks of 10 ms
        cpuSeconds: (Number(stat[13]) + Number(stat[14])) / 100
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

const onPath = (command: string) => {
  try {
    execFileSync(command, ["--version"], { stdio: "ignore" })
    return true
  } catch (e) {
    // wrk prints its usage and exits 1 for --version; only a missing command is "not there"
    return (e as NodeJS.ErrnoException).code !== "ENOENT"
  }
}

/** `BENCH_LOAD=wrk|autocannon` picks one; by default wrk when it is on the PATH. */
export const choose = (wanted: string | undefined): Generator => {
  if (wanted === "autocannon") return autocannon
  if (wanted === "wrk" || (wanted === undefined && onPath("wrk"))) return wrk
  if (wanted !== undefined) throw new Error(`BENCH_LOAD: ${wanted} is neither wrk nor autocannon`)
  return autocannon
}

/**
 * The latency at percentile `p` of a distribution of microseconds and counts, in milliseconds to
 * one decimal, as wrk reckons it (the smallest value whose count reaches the rank).
 */
export const percentileOf = (latencies: ReadonlyMap<number, number>, p: number): number => {
  const sorted = [...latencies].sort((a, b) => a[0] - b[0])
  const total = sorted.reduce((n, [, count]) => n + count, 0)
  const rank = Math.round((p / 100) * total + 0.5)
  let seen = 0
  for (const [micros, count] of sorted) {
    seen += count
    if (seen >= rank) return Math.round(micros / 100) / 10
  }
  return 0
}
