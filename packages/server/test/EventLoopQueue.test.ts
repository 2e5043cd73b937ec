/**
 * `EventLoopQueue`: queued work runs in order, a few jobs per turn of the event loop, so that callbacks that
 * become ready meanwhile (a database's reply) run between slices instead of after the whole queue;
 * jobs queued `ahead` (answers) run before the queue's own (action fronts).
 */
import { describe, expect, it } from "vitest"
import * as EventLoopQueue from "../src/EventLoopQueue.js"

/** Resolves after `n` turns of the event loop. */
const turns = (n: number) =>
  new Promise<void>((resolve) => {
    const next = (left: number) => (left === 0 ? resolve() : setImmediate(() => next(left - 1)))
    next(n)
  })

describe("EventLoopQueue", () => {
  it("runs queued jobs in order, at most the slice per turn, with what else is ready in between", async () => {
    const later = EventLoopQueue.make(4)
    const ran: Array<string> = []
    for (let i = 0; i < 10; i++) later(() => ran.push(`job ${i}`))
    // Queued after the first slice was due: it runs between the first and the second slice.
    setImmediate(() => ran.push("reply"))
    expect(ran, "nothing runs within the call that queues").toEqual([])
    await turns(4)
    expect(ran).toEqual([
      "job 0",
      "job 1",
      "job 2",
      "job 3",
      "reply",
      "job 4",
      "job 5",
      "job 6",
      "job 7",
      "job 8",
      "job 9"
    ])
  })

  it("a job queued by a job runs after the jobs queued before it, and the queue starts again once drained", async () => {
    const later = EventLoopQueue.make(2)
    const ran: Array<string> = []
    later(() => {
      ran.push("a")
      later(() => ran.push("c"))
    })
    later(() => ran.push("b"))
    await turns(3)
    expect(ran).toEqual(["a", "b", "c"])
    later(() => ran.push("d"))
    await turns(2)
    expect(ran).toEqual(["a", "b", "c", "d"])
  })

  it("jobs queued ahead run before the queue's own, in one slice with them", async () => {
    const later = EventLoopQueue.make(4)
    const ran: Array<string> = []
    for (let i = 0; i < 3; i++) later(() => ran.push(`front ${i}`))
    for (let i = 0; i < 6; i++) later.ahead(() => ran.push(`answer ${i}`))
    setImmediate(() => ran.push("reply"))
    await turns(4)
    expect(ran).toEqual([
      "answer 0",
      "answer 1",
      "answer 2",
      "answer 3",
      "reply",
      "answer 4",
      "answer 5",
      "front 0",
      "front 1",
      "front 2"
    ])
  })

  it("a job that throws leaves both lanes working", async () => {
    const later = EventLoopQueue.make(2)
    const ran: Array<string> = []
    const thrown: Array<unknown> = []
    const onError = (e: unknown) => thrown.push(e)
    process.on("uncaughtException", onError)
    try {
      later(() => ran.push("front"))
      later.ahead(() => {
        throw new Error("boom")
      })
      later.ahead(() => ran.push("answer"))
      await turns(4)
    } finally {
      process.off("uncaughtException", onError)
    }
    expect(thrown.map((e) => (e as Error).message)).toEqual(["boom"])
    expect(ran).toEqual(["answer", "front"])
  })
})
