/**
 * Streak calculus (docs/streak-semantics.md#the-rules, #at-risk-and-broken) on concrete members:
 * runs, late actions, duplicates, DST, odd offsets, the date line, skipped dates, travellers, and
 * the at-risk / broken schedule. Each instant's wall time is checked against Intl (`wall`) before
 * the rule is asserted.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Calendar from "../src/Calendar.js"
import type { LocalDate } from "../src/Calendar.js"
import * as Streak from "../src/Streak.js"

const d = Calendar.unsafeLocalDate
const at = (iso: string): number => Date.parse(iso)
const none: Streak.Notified = { atRiskFor: undefined, brokenAfter: undefined }

const wall = (ms: number, zone: string): string => {
  const f = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit"
  })
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]))
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`
}

/** Counts actions in order the way Ingest does: O(1) when possible, recompute on late actions. */
const count = (instants: ReadonlyArray<readonly [iso: string, zone: string]>, memberZone: string): Streak.Summary => {
  const seen: Array<LocalDate> = []
  let summary = Streak.empty
  for (const [iso, zone] of instants) {
    const day = Calendar.localDate(at(iso), zone)
    seen.push(day)
    const r = Streak.applyDay(summary, day, memberZone)
    if (r._tag === "Applied") summary = r.summary
    else if (r._tag === "NeedsHistory") summary = Streak.fromDays(seen, memberZone)
  }
  return summary
}
const applied = (r: Streak.Applied): Streak.Summary => {
  assert.strictEqual(r._tag, "Applied")
  return (r as Extract<Streak.Applied, { _tag: "Applied" }>).summary
}
const summary = (lastActiveDay: string, run: number, best: number): Streak.Summary => ({
  lastActiveDay: d(lastActiveDay),
  run,
  best,
  periodDays: 1,
  freezes: 0,
  grants: []
})
/** The at-risk event of a daily streak with no freezes, owed on `day`. */
const atRiskOn = (day: string): Streak.DueEvent => ({
  _tag: "AtRisk",
  localDate: d(day),
  period: { start: d(day), end: d(day) },
  freezesAvailable: 0
})
const pick = (s: Streak.State) => ({
  today: s.today,
  current: s.current,
  best: s.best,
  todayDone: s.todayDone,
  pending: s.pending
})

describe("applyDay and fromDays", () => {
  it("the first action starts a run of 1", () => {
    const s = applied(Streak.applyDay(Streak.empty, d("2025-06-10"), "UTC"))
    assert.deepStrictEqual(s, summary("2025-06-10", 1, 1))
  })

  it("the next day extends the run; a missed day starts a new run and best is kept", () => {
    const s = Streak.fromDays([d("2025-06-10"), d("2025-06-11"), d("2025-06-12")], "UTC")
    assert.deepStrictEqual(s, summary("2025-06-12", 3, 3))
    const after = applied(Streak.applyDay(s, d("2025-06-14"), "UTC"))
    assert.deepStrictEqual(after, summary("2025-06-14", 1, 3))
  })

  it("a second action on the last active day is a Duplicate", () => {
    const s = Streak.fromDays([d("2025-06-10")], "UTC")
    assert.deepStrictEqual(Streak.applyDay(s, d("2025-06-10"), "UTC"), { _tag: "Duplicate" })
  })

  it("a late action that fills a gap needs history, and fromDays merges the two runs and raises best", () => {
    const days = ["2025-06-01", "2025-06-02", "2025-06-04", "2025-06-05", "2025-06-06"].map(d)
    const s = Streak.fromDays(days, "UTC")
    assert.deepStrictEqual(s, summary("2025-06-06", 3, 3))
    assert.deepStrictEqual(Streak.applyDay(s, d("2025-06-03"), "UTC"), { _tag: "NeedsHistory" })
    const merged = Streak.fromDays([...days, d("2025-06-03")], "UTC")
    assert.deepStrictEqual(merged, summary("2025-06-06", 6, 6))
  })

  it("fromDays ignores order and duplicates", () => {
    const a = Streak.fromDays(["2025-06-03", "2025-06-01", "2025-06-02", "2025-06-02", "2025-05-20"].map(d), "UTC")
    assert.deepStrictEqual(a, summary("2025-06-03", 3, 3))
    assert.deepStrictEqual(Streak.fromDays([], "UTC"), Streak.empty)
  })

  it("a leap day is an ordinary day of a run", () => {
    const s = Streak.fromDays(["2024-02-28", "2024-02-29", "2024-03-01"].map(d), "UTC")
    assert.strictEqual(s.run, 3)
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2024-03-02T12:00:00Z"), "UTC")), {
      today: "2024-03-02",
      current: 3,
      best: 3,
      todayDone: false,
      pending: true
    })
  })
})

describe("evaluate", () => {
  const s = Streak.fromDays(
    ["2025-06-01", "2025-06-02", "2025-06-03", "2025-06-04", "2025-06-08", "2025-06-09"].map(d),
    "UTC"
  )

  it("with no activity: current 0, nothing pending", () => {
    assert.deepStrictEqual(pick(Streak.evaluate(Streak.empty, at("2025-06-09T12:00:00Z"), "UTC")), {
      today: "2025-06-09",
      current: 0,
      best: 0,
      todayDone: false,
      pending: false
    })
  })

  it("today done: current is the run ending today", () => {
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-09T12:00:00Z"), "UTC")), {
      today: "2025-06-09",
      current: 2,
      best: 4,
      todayDone: true,
      pending: false
    })
  })

  it("only yesterday done: the run is alive and pending", () => {
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-10T23:59:59.999Z"), "UTC")), {
      today: "2025-06-10",
      current: 2,
      best: 4,
      todayDone: false,
      pending: true
    })
  })

  it("a whole day missed: current 0, best kept", () => {
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-11T00:00:00Z"), "UTC")), {
      today: "2025-06-11",
      current: 0,
      best: 4,
      todayDone: false,
      pending: false
    })
  })
})

describe("DST", () => {
  it("New York: actions 23 hours apart across 2025-03-09 and 48 hours apart across 2025-11-02 are unbroken runs", () => {
    const ny = "America/New_York"
    assert.strictEqual(wall(at("2025-03-09T04:30:00Z"), ny), "2025-03-08 23:30:00")
    assert.strictEqual(wall(at("2025-03-10T03:30:00Z"), ny), "2025-03-09 23:30:00")
    const spring = count([["2025-03-09T04:30:00Z", ny], ["2025-03-10T03:30:00Z", ny]], ny)
    assert.deepStrictEqual([spring.lastActiveDay, spring.run], ["2025-03-09", 2])
    assert.strictEqual(wall(at("2025-11-01T04:30:00Z"), ny), "2025-11-01 00:30:00")
    assert.strictEqual(wall(at("2025-11-03T04:30:00Z"), ny), "2025-11-02 23:30:00")
    const fall = count([["2025-11-01T04:30:00Z", ny], ["2025-11-03T04:30:00Z", ny]], ny)
    assert.deepStrictEqual([fall.lastActiveDay, fall.run], ["2025-11-02", 2])
    assert.deepStrictEqual(pick(Streak.evaluate(fall, at("2025-11-04T04:59:59.999Z"), ny)), {
      today: "2025-11-03",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
    assert.strictEqual(Streak.evaluate(fall, at("2025-11-04T05:00:00Z"), ny).current, 0)
  })

  it("London: runs across 2025-03-30 (23 h) and 2025-10-26 (25 h) are unbroken", () => {
    const ldn = "Europe/London"
    assert.strictEqual(wall(at("2025-03-29T23:30:00Z"), ldn), "2025-03-29 23:30:00")
    assert.strictEqual(wall(at("2025-03-30T22:30:00Z"), ldn), "2025-03-30 23:30:00")
    const spring = count([["2025-03-29T23:30:00Z", ldn], ["2025-03-30T22:30:00Z", ldn]], ldn)
    assert.deepStrictEqual([spring.lastActiveDay, spring.run], ["2025-03-30", 2])
    assert.strictEqual(wall(at("2025-10-24T23:30:00Z"), ldn), "2025-10-25 00:30:00")
    assert.strictEqual(wall(at("2025-10-26T23:30:00Z"), ldn), "2025-10-26 23:30:00")
    const fall = count([["2025-10-24T23:30:00Z", ldn], ["2025-10-26T23:30:00Z", ldn]], ldn)
    assert.deepStrictEqual([fall.lastActiveDay, fall.run], ["2025-10-26", 2])
    assert.deepStrictEqual(pick(Streak.evaluate(fall, at("2025-10-27T12:00:00Z"), ldn)), {
      today: "2025-10-27",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
  })

  it("Santiago 2024-09-08 (no midnight): actions 1 ms apart, at 23:59:59.999 and at the 01:00 start, are two days", () => {
    const scl = "America/Santiago"
    assert.strictEqual(wall(at("2024-09-08T03:59:59.999Z"), scl), "2024-09-07 23:59:59")
    assert.strictEqual(wall(at("2024-09-08T04:00:00Z"), scl), "2024-09-08 01:00:00")
    const s = count([["2024-09-08T03:59:59.999Z", scl], ["2024-09-08T04:00:00.000Z", scl]], scl)
    assert.deepStrictEqual(s, summary("2024-09-08", 2, 2))
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2024-09-08T04:00:00Z"), scl)), {
      today: "2024-09-08",
      current: 2,
      best: 2,
      todayDone: true,
      pending: false
    })
  })
})

describe("half-hour, quarter-hour and 45-minute offsets", () => {
  it("Kolkata (+05:30) and Kathmandu (+05:45): 23:59 and the next 00:00 local are consecutive days", () => {
    for (
      const [zone, before, start] of [
        ["Asia/Kolkata", "2025-06-01T18:29:00Z", "2025-06-01T18:30:00Z"],
        ["Asia/Kathmandu", "2025-06-01T18:14:00Z", "2025-06-01T18:15:00Z"]
      ] as const
    ) {
      assert.strictEqual(wall(at(before), zone), "2025-06-01 23:59:00")
      assert.strictEqual(wall(at(start), zone), "2025-06-02 00:00:00")
      const s = count([[before, zone], [start, zone]], zone)
      assert.deepStrictEqual([s.lastActiveDay, s.run], ["2025-06-02", 2], zone)
    }
  })

  it("Chatham: a run across the 2025-09-28 DST start (+12:45 -> +13:45) is unbroken, and breaks at 00:00 local", () => {
    const cht = "Pacific/Chatham"
    assert.strictEqual(wall(at("2025-09-27T11:05:00Z"), cht), "2025-09-27 23:50:00")
    assert.strictEqual(wall(at("2025-09-28T10:05:00Z"), cht), "2025-09-28 23:50:00")
    const s = count([["2025-09-27T11:05:00Z", cht], ["2025-09-28T10:05:00Z", cht]], cht)
    assert.strictEqual(s.run, 2)
    assert.strictEqual(wall(at("2025-09-29T10:14:59Z"), cht), "2025-09-29 23:59:59")
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-09-29T10:14:59Z"), cht)), {
      today: "2025-09-29",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
    assert.strictEqual(Streak.evaluate(s, at("2025-09-29T10:15:00Z"), cht).current, 0)
  })
})

describe("the date line", () => {
  it("members in Kiritimati (+14) and Pago Pago (-11) acting at the same instants have different days and states", () => {
    const kir = "Pacific/Kiritimati"
    const ppg = "Pacific/Pago_Pago"
    const actions = ["2025-06-01T10:30:00Z", "2025-06-02T10:30:00Z"]
    assert.deepStrictEqual(actions.map((t) => wall(at(t), kir)), ["2025-06-02 00:30:00", "2025-06-03 00:30:00"])
    assert.deepStrictEqual(actions.map((t) => wall(at(t), ppg)), ["2025-05-31 23:30:00", "2025-06-01 23:30:00"])
    const k = count(actions.map((t) => [t, kir] as const), kir)
    const p = count(actions.map((t) => [t, ppg] as const), ppg)
    assert.deepStrictEqual([k.lastActiveDay, p.lastActiveDay], ["2025-06-03", "2025-06-01"])
    const noon = at("2025-06-02T22:30:00Z")
    assert.deepStrictEqual(pick(Streak.evaluate(k, noon, kir)), {
      today: "2025-06-03",
      current: 2,
      best: 2,
      todayDone: true,
      pending: false
    })
    assert.deepStrictEqual(pick(Streak.evaluate(p, noon, ppg)), {
      today: "2025-06-02",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
    const later = at("2025-06-03T11:00:00Z")
    assert.deepStrictEqual(pick(Streak.evaluate(k, later, kir)), {
      today: "2025-06-04",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
    assert.deepStrictEqual(pick(Streak.evaluate(p, later, ppg)), {
      today: "2025-06-03",
      current: 0,
      best: 2,
      todayDone: false,
      pending: false
    })
  })
})

describe("skipped dates", () => {
  it("Apia: activity on 2011-12-29 and 2011-12-31 is a run of 2 (12-30 never existed there)", () => {
    const apia = "Pacific/Apia"
    assert.strictEqual(wall(at("2011-12-29T20:00:00Z"), apia), "2011-12-29 10:00:00")
    assert.strictEqual(wall(at("2011-12-30T22:00:00Z"), apia), "2011-12-31 12:00:00")
    assert.isFalse(Calendar.dayExists(d("2011-12-30"), apia))
    const s = count([["2011-12-29T20:00:00Z", apia], ["2011-12-30T22:00:00Z", apia]], apia)
    assert.deepStrictEqual(s, summary("2011-12-31", 2, 2))
    assert.deepStrictEqual(Streak.fromDays([d("2011-12-31"), d("2011-12-29")], apia), s)
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2011-12-30T22:00:00Z"), apia)), {
      today: "2011-12-31",
      current: 2,
      best: 2,
      todayDone: true,
      pending: false
    })
    // Only 12-29 done: on 12-31 the run is alive and pending, not broken.
    const one = Streak.fromDays([d("2011-12-29")], apia)
    assert.deepStrictEqual(pick(Streak.evaluate(one, at("2011-12-30T10:00:00Z"), apia)), {
      today: "2011-12-31",
      current: 1,
      best: 1,
      todayDone: false,
      pending: true
    })
    // The same dates in a zone where 12-30 exists are two runs of 1.
    assert.deepStrictEqual(Streak.fromDays([d("2011-12-29"), d("2011-12-31")], "UTC").run, 1)
  })
})

describe("travellers", () => {
  it("London then New York: each action is dated in its own zone, the state in the current zone", () => {
    assert.strictEqual(wall(at("2025-06-10T08:00:00Z"), "Europe/London"), "2025-06-10 09:00:00")
    assert.strictEqual(wall(at("2025-06-12T00:00:00Z"), "America/New_York"), "2025-06-11 20:00:00")
    const s = count(
      [["2025-06-10T08:00:00Z", "Europe/London"], ["2025-06-12T00:00:00Z", "America/New_York"]],
      "America/New_York"
    )
    assert.deepStrictEqual(s, summary("2025-06-11", 2, 2))
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-12T03:00:00Z"), "America/New_York")), {
      today: "2025-06-11",
      current: 2,
      best: 2,
      todayDone: true,
      pending: false
    })
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-12T04:00:00Z"), "America/New_York")), {
      today: "2025-06-12",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
  })

  it("New York then Tokyo: two actions 11 hours apart fall on consecutive local days", () => {
    assert.strictEqual(wall(at("2025-06-10T12:00:00Z"), "America/New_York"), "2025-06-10 08:00:00")
    assert.strictEqual(wall(at("2025-06-10T23:00:00Z"), "Asia/Tokyo"), "2025-06-11 08:00:00")
    const s = count(
      [["2025-06-10T12:00:00Z", "America/New_York"], ["2025-06-10T23:00:00Z", "Asia/Tokyo"]],
      "Asia/Tokyo"
    )
    assert.deepStrictEqual([s.lastActiveDay, s.run], ["2025-06-11", 2])
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-11T14:59:59.999Z"), "Asia/Tokyo")), {
      today: "2025-06-11",
      current: 2,
      best: 2,
      todayDone: true,
      pending: false
    })
    assert.deepStrictEqual(pick(Streak.evaluate(s, at("2025-06-11T15:00:00Z"), "Asia/Tokyo")), {
      today: "2025-06-12",
      current: 2,
      best: 2,
      todayDone: false,
      pending: true
    })
  })

  it("an action dated ahead of the member's today (Kiritimati, then Honolulu) counts today only when today is in that run", () => {
    assert.strictEqual(wall(at("2025-06-01T10:30:00Z"), "Pacific/Kiritimati"), "2025-06-02 00:30:00")
    assert.strictEqual(wall(at("2025-06-01T10:30:00Z"), "Pacific/Honolulu"), "2025-06-01 00:30:00")
    const now = at("2025-06-01T10:30:00Z")
    const one = Streak.fromDays([d("2025-06-02")], "Pacific/Honolulu")
    assert.deepStrictEqual(pick(Streak.evaluate(one, now, "Pacific/Honolulu")), {
      today: "2025-06-01",
      current: 0,
      best: 1,
      todayDone: false,
      pending: false
    })
    const two = Streak.fromDays([d("2025-06-01"), d("2025-06-02")], "Pacific/Honolulu")
    assert.deepStrictEqual(pick(Streak.evaluate(two, now, "Pacific/Honolulu")), {
      today: "2025-06-01",
      current: 1,
      best: 2,
      todayDone: true,
      pending: false
    })
  })
})

describe("day edges", () => {
  it("actions at 23:59:59.999 and 00:00:00.000 local, 1 ms apart, are two consecutive days", () => {
    const ny = "America/New_York"
    assert.strictEqual(wall(at("2025-01-15T04:59:59.999Z"), ny), "2025-01-14 23:59:59")
    assert.strictEqual(wall(at("2025-01-15T05:00:00.000Z"), ny), "2025-01-15 00:00:00")
    const s = count([["2025-01-15T04:59:59.999Z", ny], ["2025-01-15T05:00:00.000Z", ny]], ny)
    assert.deepStrictEqual(s, summary("2025-01-15", 2, 2))
    // A second action later the same day is a duplicate.
    assert.deepStrictEqual(Streak.applyDay(s, Calendar.localDate(at("2025-01-16T04:59:59.999Z"), ny), ny), {
      _tag: "Duplicate"
    })
  })
})

describe("week and milestones", () => {
  it("week lists Monday..Sunday of today's ISO week across the year boundary, marking today and check-ins", () => {
    const w = Streak.week(d("2026-12-31"), new Set(["2026-12-29", "2026-12-31", "2027-01-02", "2027-01-05"]))
    assert.deepStrictEqual(w.map((e) => [e.isoDate, e.label, e.dayNumber, e.isToday, e.isCheckedIn]), [
      ["2026-12-28", "Mon", 28, false, false],
      ["2026-12-29", "Tue", 29, false, true],
      ["2026-12-30", "Wed", 30, false, false],
      ["2026-12-31", "Thu", 31, true, true],
      ["2027-01-01", "Fri", 1, false, false],
      ["2027-01-02", "Sat", 2, false, true],
      ["2027-01-03", "Sun", 3, false, false]
    ])
  })

  it("week answers each today with its own week when reads of different todays interleave (the week is kept per today)", () => {
    const days = new Set(["2026-03-02", "2026-03-09"])
    const weekOf = (today: string) => Streak.week(d(today), days).map((e) => [e.isoDate, e.isToday, e.isCheckedIn])
    const first = weekOf("2026-03-02")
    const second = weekOf("2026-03-10")
    assert.deepStrictEqual(second[0], ["2026-03-09", false, true])
    assert.deepStrictEqual(second[1], ["2026-03-10", true, false])
    // Asked again, the first today gets its own week back, today and check-ins marked afresh.
    assert.deepStrictEqual(weekOf("2026-03-02"), first)
    assert.deepStrictEqual(first[0], ["2026-03-02", true, true])
    // The same today with other check-ins: only the dates are kept, not the marks.
    assert.deepStrictEqual(Streak.week(d("2026-03-02"), new Set())[0], {
      isoDate: d("2026-03-02"),
      label: "Mon",
      dayNumber: 2,
      isToday: true,
      isCheckedIn: false
    })
  })

  it("newlyCrossed returns reached, not yet achieved milestones, lowest target first", () => {
    const ms = [{ id: "a", target: 7 }, { id: "b", target: 3 }, { id: "c", target: 30 }, { id: "d", target: 1 }, {
      id: "e",
      target: 7
    }]
    assert.deepStrictEqual(Streak.newlyCrossed(ms, 7, new Set(["d"])).map((m) => m.id), ["b", "a", "e"])
    assert.deepStrictEqual(Streak.newlyCrossed(ms, 0, new Set()), [])
  })
})

describe("due events", () => {
  const ny = "America/New_York"
  const run3 = Streak.fromDays(["2025-06-08", "2025-06-09", "2025-06-10"].map(d), ny)

  it("nothing is due without activity", () => {
    assert.isUndefined(Streak.atRiskAt(Streak.empty, ny))
    assert.isUndefined(Streak.brokenAt(Streak.empty, ny))
    assert.isUndefined(Streak.nextDueAt(Streak.empty, ny, none))
    assert.isUndefined(Streak.dueEvent(Streak.empty, ny, at("2030-01-01T00:00:00Z"), none))
  })

  it("west of UTC (New York): at-risk once at the start of the owed day, then broken once for the run", () => {
    assert.strictEqual(Streak.atRiskAt(run3, ny)?.toISOString(), "2025-06-11T04:00:00.000Z")
    assert.strictEqual(Streak.brokenAt(run3, ny)?.toISOString(), "2025-06-12T04:00:00.000Z")
    assert.strictEqual(Streak.nextDueAt(run3, ny, none)?.toISOString(), "2025-06-11T04:00:00.000Z")
    assert.isUndefined(Streak.dueEvent(run3, ny, at("2025-06-11T03:59:59.999Z"), none))
    assert.deepStrictEqual(Streak.dueEvent(run3, ny, at("2025-06-11T04:00:00Z"), none), atRiskOn("2025-06-11"))
    const warned: Streak.Notified = { atRiskFor: d("2025-06-11"), brokenAfter: undefined }
    assert.isUndefined(Streak.dueEvent(run3, ny, at("2025-06-11T20:00:00Z"), warned))
    assert.strictEqual(Streak.nextDueAt(run3, ny, warned)?.toISOString(), "2025-06-12T04:00:00.000Z")
    assert.isUndefined(Streak.dueEvent(run3, ny, at("2025-06-12T03:59:59.999Z"), warned))
    assert.deepStrictEqual(Streak.dueEvent(run3, ny, at("2025-06-12T04:00:00Z"), warned), {
      _tag: "Broken",
      endedRun: 3,
      lastActiveDate: d("2025-06-10")
    })
    const done: Streak.Notified = { atRiskFor: d("2025-06-11"), brokenAfter: d("2025-06-10") }
    assert.isUndefined(Streak.dueEvent(run3, ny, at("2025-06-20T00:00:00Z"), done))
    assert.isUndefined(Streak.nextDueAt(run3, ny, done))
  })

  it("east of UTC (Kiritimati, +14): the due instants are the local midnights, the day before in UTC", () => {
    const kir = "Pacific/Kiritimati"
    const s = Streak.fromDays([d("2025-06-10")], kir)
    assert.strictEqual(wall(at("2025-06-10T10:00:00Z"), kir), "2025-06-11 00:00:00")
    assert.strictEqual(Streak.atRiskAt(s, kir)?.toISOString(), "2025-06-10T10:00:00.000Z")
    assert.strictEqual(Streak.brokenAt(s, kir)?.toISOString(), "2025-06-11T10:00:00.000Z")
    assert.deepStrictEqual(Streak.dueEvent(s, kir, at("2025-06-10T10:00:00Z"), none), atRiskOn("2025-06-11"))
    assert.deepStrictEqual(Streak.dueEvent(s, kir, at("2025-06-11T10:00:00Z"), none), {
      _tag: "Broken",
      endedRun: 1,
      lastActiveDate: d("2025-06-10")
    })
  })

  it("catch-up after downtime fires only broken: at-risk is never sent for a day already over", () => {
    const late = at("2025-06-14T12:00:00Z")
    assert.deepStrictEqual(Streak.dueEvent(run3, ny, late, none), {
      _tag: "Broken",
      endedRun: 3,
      lastActiveDate: d("2025-06-10")
    })
    const broken: Streak.Notified = { atRiskFor: undefined, brokenAfter: d("2025-06-10") }
    assert.isUndefined(Streak.dueEvent(run3, ny, late, broken))
    assert.isUndefined(Streak.nextDueAt(run3, ny, broken))
  })

  it("a check that catches up while the owed day is still today still sends at-risk", () => {
    assert.deepStrictEqual(Streak.dueEvent(run3, ny, at("2025-06-12T03:00:00Z"), none), atRiskOn("2025-06-11"))
  })

  it("a new run after a broken one is due again, whatever was sent for the old run", () => {
    const next = applied(Streak.applyDay(run3, d("2025-06-15"), ny))
    const stale: Streak.Notified = { atRiskFor: d("2025-06-11"), brokenAfter: d("2025-06-10") }
    assert.strictEqual(Streak.nextDueAt(next, ny, stale)?.toISOString(), "2025-06-16T04:00:00.000Z")
    assert.deepStrictEqual(Streak.dueEvent(next, ny, at("2025-06-16T04:00:00Z"), stale), atRiskOn("2025-06-16"))
  })

  it("due instants follow DST (23-hour owed day) and skipped dates (Apia)", () => {
    const dst = Streak.fromDays([d("2025-03-08")], ny)
    assert.strictEqual(Streak.atRiskAt(dst, ny)?.toISOString(), "2025-03-09T05:00:00.000Z")
    assert.strictEqual(Streak.brokenAt(dst, ny)?.toISOString(), "2025-03-10T04:00:00.000Z")
    const apia = "Pacific/Apia"
    const s = Streak.fromDays([d("2011-12-29")], apia)
    assert.strictEqual(Streak.atRiskAt(s, apia)?.toISOString(), "2011-12-30T10:00:00.000Z")
    assert.strictEqual(Streak.brokenAt(s, apia)?.toISOString(), "2011-12-31T10:00:00.000Z")
    assert.deepStrictEqual(Streak.dueEvent(s, apia, at("2011-12-30T10:00:00Z"), none), atRiskOn("2011-12-31"))
  })
})
