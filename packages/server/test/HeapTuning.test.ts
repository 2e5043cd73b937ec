/**
 * The `streaks` command tunes V8's heap unless node's own flags chose: `unset` tells which of its
 * settings node's command line left to it.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as HeapTuning from "../src/HeapTuning.js"

const fixture = fileURLToPath(new URL("fixtures/youngGeneration.ts", import.meta.url))
const scavengeFixture = fileURLToPath(new URL("fixtures/scavengeTasks.ts", import.meta.url))
const startFixture = fileURLToPath(new URL("fixtures/youngGenerationAtStart.ts", import.meta.url))

/** The young generation's size in MB once a process that applied the settings has allocated hard. */
const youngMb = (nodeFlags: ReadonlyArray<string>): number =>
  Number(execFileSync(process.execPath, [...nodeFlags, "--import", "tsx", fixture], { encoding: "utf8" }))

/**
 * Scavenger tasks per scavenge in a process that applied the settings for `cores` cores. V8 prints
 * a line per scavenge and one per scavenger task, each with its isolate; tsx's loader thread is an
 * isolate of its own, and the first scavenges come before the settings are applied, so only the
 * main isolate's lines after its first ten scavenges count.
 */
const tasksPerScavenge = (cores: number, nodeFlags: ReadonlyArray<string> = []): number => {
  const trace = execFileSync(
    process.execPath,
    [...nodeFlags, "--trace-gc", "--trace-parallel-scavenge", "--import", "tsx", scavengeFixture, String(cores)],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }
  )
  const byIsolate = new Map<string, Array<"collection" | "task">>()
  for (const match of trace.matchAll(/\[\d+:(0x[0-9a-f]+)\]\s+(?:\d+ ms: (Scavenge )|(scavenge)\[)/g)) {
    const lines = byIsolate.get(match[1]!) ?? []
    lines.push(match[2] !== undefined ? "collection" : "task")
    byIsolate.set(match[1]!, lines)
  }
  const main = [...byIsolate.values()].sort((a, b) => b.length - a.length)[0]!
  const collectionsAt = main.flatMap((line, i) => (line === "collection" ? [i] : []))
  const counted = main.slice((collectionsAt[9] ?? main.length) + 1)
  const collections = counted.filter((line) => line === "collection").length
  assert.isAbove(collections, 10, "the fixture allocates enough for a few dozen scavenges")
  return counted.filter((line) => line === "task").length / collections
}

describe("HeapTuning.unset", () => {
  it("leaves a setting to the command when node was not given it, whatever else node was given", () => {
    assert.isTrue(HeapTuning.unset([], "allocation-site-pretenuring"))
    assert.isTrue(HeapTuning.unset(["--trace-gc-nvp", "--trace-pretenuring"], "allocation-site-pretenuring"))
    assert.isTrue(HeapTuning.unset(["--max-old-space-size=96"], "max-semi-space-size"))
  })

  it("leaves it to node's flags when they set it, either way, with a value or not, in either spelling", () => {
    assert.isFalse(HeapTuning.unset(["--allocation-site-pretenuring"], "allocation-site-pretenuring"))
    assert.isFalse(HeapTuning.unset(["--no-allocation-site-pretenuring"], "allocation-site-pretenuring"))
    assert.isFalse(HeapTuning.unset(["--noallocation-site-pretenuring"], "allocation-site-pretenuring"))
    assert.isFalse(HeapTuning.unset(["--allocation_site_pretenuring"], "allocation-site-pretenuring"))
    assert.isFalse(HeapTuning.unset(["--max-semi-space-size=4"], "max-semi-space-size"))
    assert.isFalse(HeapTuning.unset(["--max_semi_space_size=4"], "max-semi-space-size"))
    assert.isFalse(HeapTuning.unset(["--heap-growing-percent=80"], "heap-growing-percent"))
  })
})

describe("HeapTuning.apply", () => {
  it("stops the young generation at two 8 MB semi-spaces where V8 would let it grow further", () => {
    // With a growth factor of node's own, the command leaves the young generation to V8: its
    // default limit on this machine (two 16 MB semi-spaces with a few GB of memory).
    const v8Default = youngMb(["--semi-space-growth-factor=2"])
    assert.strictEqual(youngMb([]), Math.min(16, v8Default))
  })

  it("never doubles the young generation past the cap, from whatever size it grows", () => {
    // A start at 3 MB semi-spaces grows 6, 12 and would double to 24 MB: as after V8 shrinks the
    // young generation while the server idles and it grows back under load.
    const young = youngMb(["--min-semi-space-size=3"])
    assert.isAtMost(young, 16)
    assert.isAbove(young, 8)
  })

  it("keeps the young generation under the cap through a start that allocates in one synchronous run", () => {
    // As loading the command's modules does: no report of a collection arrives until it ends. With
    // V8's growth factor left in place until the first report, this reached V8's own 32 MB.
    const [young, objects] = execFileSync(process.execPath, ["--import", "tsx", startFixture], { encoding: "utf8" })
      .split(" ").map(Number)
    assert.strictEqual(objects, 600_000)
    assert.isAtMost(young!, 16)
  })

  it("leaves the young generation's size to node's flags when they set it", () => {
    assert.strictEqual(youngMb(["--max-semi-space-size=4"]), 8)
  })

  it("scavenges on the main thread alone on one or two cores", () => {
    assert.isAtMost(tasksPerScavenge(2), 1.2)
  })

  it("leaves scavenges parallel on more cores, or when node's flags say so", () => {
    // V8 splits a scavenge among helper threads once the young generation holds enough to share.
    assert.isAbove(tasksPerScavenge(8), 1.5)
    assert.isAbove(tasksPerScavenge(2, ["--parallel-scavenge"]), 1.5)
  })
})
