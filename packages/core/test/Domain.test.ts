/**
 * `Domain.unsafeMake` builds the hot path's keys, rows and records without the Schema
 * constructor: what it builds must be what `new` builds without validation (what the hot path
 * built before), for every class it is used with. The fields here pass validation too.
 */
import { describe, expect, it } from "@effect/vitest"
import { Equal, Hash } from "effect"
import type { LocalDate } from "../src/Calendar.js"
import { ActionRecord, StreakKey, StreakRow, unsafeMake } from "../src/Domain.js"
import type { EventId, ProgramId, ProjectId, UserHash } from "../src/Ids.js"

const key = {
  projectId: "prj_1" as ProjectId,
  programId: "prg_1" as ProgramId,
  userHash: "u1" as UserHash,
  ledger: "live" as const
}
const day = (s: string) => s as LocalDate

const same = <A extends object>(made: A, built: A) => {
  expect(made).toBeInstanceOf(built.constructor)
  expect(Equal.equals(made, built)).toBe(true)
  expect(Equal.equals(built, made)).toBe(true)
  expect(Hash.hash(made)).toBe(Hash.hash(built))
  expect(Object.entries(made)).toEqual(Object.entries(built))
  expect(JSON.stringify(made)).toBe(JSON.stringify(built))
  expect(String(made)).toBe(String(built))
}

describe("Domain.unsafeMake", () => {
  it("builds the StreakKey that new builds", () => {
    same(unsafeMake(StreakKey, key), new StreakKey(key, true))
    expect(Equal.equals(unsafeMake(StreakKey, key), new StreakKey({ ...key, ledger: "test" }))).toBe(false)
  })

  it("builds the StreakRow that new builds, with and without its optional fields", () => {
    const bare = { ...key, run: 0, best: 0, timezone: "UTC", updatedAt: new Date(0) }
    same(unsafeMake(StreakRow, bare), new StreakRow(bare, true))
    expect(() => new StreakRow(bare)).not.toThrow()
    const full = {
      ...bare,
      lastActiveDay: day("2024-03-01"),
      run: 3,
      best: 5,
      atRiskNotifiedFor: day("2024-03-02"),
      brokenNotifiedAfter: day("2024-02-20"),
      dueAt: new Date(86_400_000)
    }
    same(unsafeMake(StreakRow, full), new StreakRow(full, true))
    expect(Equal.equals(unsafeMake(StreakRow, full), new StreakRow(full))).toBe(true)
  })

  it("builds the ActionRecord that new builds", () => {
    const record = {
      id: "evt_1" as EventId,
      projectId: key.projectId,
      programId: key.programId,
      userHash: key.userHash,
      event: "lesson",
      eventType: "streak_interaction" as const,
      door: "server" as const,
      ledger: "live" as const,
      ts: new Date(0),
      receivedAt: new Date(1),
      localDate: day("1970-01-01"),
      timezone: "UTC",
      counted: true,
      sessionId: "s1",
      extra: { meta: { a: 1 } }
    }
    same(unsafeMake(ActionRecord, record), new ActionRecord(record, true))
    expect(() => new ActionRecord(record)).not.toThrow()
  })
})
