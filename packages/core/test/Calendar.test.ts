/**
 * Calendar: local dates of instants and day boundaries on DST, midnight gaps, odd offsets, the
 * date line and skipped dates. Every zone fact is first checked against Intl (the runtime's tz
 * database, tzdata 2025c in Node 20.20) through `wall`, which shares no code with Calendar.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import * as Calendar from "../src/Calendar.js"

const d = Calendar.unsafeLocalDate
const HOUR = 3_600_000
const at = (iso: string): number => Date.parse(iso)

const oracles = new Map<string, Intl.DateTimeFormat>()
/** Wall clock "YYYY-MM-DD HH:mm:ss.SSS" of an instant in a zone, read from Intl directly. */
const wall = (ms: number, zone: string): string => {
  let f = oracles.get(zone)
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit"
    })
    oracles.set(zone, f)
  }
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]))
  const millis = String(((ms % 1000) + 1000) % 1000).padStart(3, "0")
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}.${millis}`
}
const dayLength = (date: string, zone: string): number =>
  (Calendar.startOfDay(Calendar.addDays(d(date), 1), zone).getTime() - Calendar.startOfDay(d(date), zone).getTime()) /
  HOUR

describe("LocalDate", () => {
  it("accepts real calendar dates only, leap days included", () => {
    const is = Schema.is(Calendar.LocalDate)
    assert.isTrue(is("2024-02-29"))
    assert.isTrue(is("2000-02-29"))
    for (
      const bad of [
        "2023-02-29",
        "1900-02-29",
        "2024-13-01",
        "2024-04-31",
        "2024-1-01",
        "0000-01-01",
        "2024-01-01T00:00",
        20240101
      ]
    ) {
      assert.isFalse(is(bad), String(bad))
    }
    assert.strictEqual(Calendar.unsafeLocalDate("2024-02-29"), "2024-02-29")
    assert.throws(() => Calendar.unsafeLocalDate("2023-02-29"))
  })
})

describe("isValidZone", () => {
  it("accepts IANA names, links and UTC; rejects offsets and garbage", () => {
    for (
      const z of [
        "UTC",
        "America/New_York",
        "Asia/Calcutta",
        "Etc/GMT+5",
        "America/Argentina/Buenos_Aires",
        "Pacific/Chatham"
      ]
    ) {
      assert.isTrue(Calendar.isValidZone(z), z)
    }
    for (
      const z of ["+05:00", "-05:00", "+0530", "+05", "Z", "", "Mars/Olympus", "America/New York", "../etc/passwd"]
    ) {
      assert.isFalse(Calendar.isValidZone(z), z)
    }
  })
})

describe("DST in America/New_York and Europe/London", () => {
  it("2025-03-09 in New York has 23 hours and 2025-11-02 has 25", () => {
    // Verified: clocks jump 01:59:59 EST -> 03:00 EDT at 07:00Z, and fall back 01:59:59 EDT -> 01:00 EST at 06:00Z.
    assert.strictEqual(wall(at("2025-03-09T06:59:59Z"), "America/New_York"), "2025-03-09 01:59:59.000")
    assert.strictEqual(wall(at("2025-03-09T07:00:00Z"), "America/New_York"), "2025-03-09 03:00:00.000")
    assert.strictEqual(wall(at("2025-11-02T06:00:00Z"), "America/New_York"), "2025-11-02 01:00:00.000")
    assert.strictEqual(
      Calendar.startOfDay(d("2025-03-09"), "America/New_York").toISOString(),
      "2025-03-09T05:00:00.000Z"
    )
    assert.strictEqual(
      Calendar.startOfDay(d("2025-03-10"), "America/New_York").toISOString(),
      "2025-03-10T04:00:00.000Z"
    )
    assert.strictEqual(dayLength("2025-03-09", "America/New_York"), 23)
    assert.strictEqual(dayLength("2025-11-02", "America/New_York"), 25)
    assert.strictEqual(dayLength("2025-06-15", "America/New_York"), 24)
  })

  it("2025-03-30 in London has 23 hours and 2025-10-26 has 25", () => {
    // Verified: 00:59:59 GMT -> 02:00 BST at 01:00Z, and 01:59:59 BST -> 01:00 GMT at 01:00Z.
    assert.strictEqual(wall(at("2025-03-30T01:00:00Z"), "Europe/London"), "2025-03-30 02:00:00.000")
    assert.strictEqual(wall(at("2025-10-26T01:00:00Z"), "Europe/London"), "2025-10-26 01:00:00.000")
    assert.strictEqual(Calendar.startOfDay(d("2025-03-31"), "Europe/London").toISOString(), "2025-03-30T23:00:00.000Z")
    assert.strictEqual(Calendar.startOfDay(d("2025-10-27"), "Europe/London").toISOString(), "2025-10-27T00:00:00.000Z")
    assert.strictEqual(dayLength("2025-03-30", "Europe/London"), 23)
    assert.strictEqual(dayLength("2025-10-26", "Europe/London"), 25)
  })
})

describe("days whose midnight does not exist", () => {
  it("America/Santiago 2024-09-08 starts at 01:00 local (04:00Z), the first existing instant", () => {
    // Verified: at 04:00Z the wall clock jumps from 2024-09-07 23:59:59 (-04) to 2024-09-08 01:00 (-03).
    assert.strictEqual(wall(at("2024-09-08T03:59:59.999Z"), "America/Santiago"), "2024-09-07 23:59:59.999")
    assert.strictEqual(wall(at("2024-09-08T04:00:00Z"), "America/Santiago"), "2024-09-08 01:00:00.000")
    const start = Calendar.startOfDay(d("2024-09-08"), "America/Santiago")
    assert.strictEqual(start.toISOString(), "2024-09-08T04:00:00.000Z")
    assert.strictEqual(Calendar.localDate(start, "America/Santiago"), "2024-09-08")
    assert.strictEqual(Calendar.localDate(start.getTime() - 1, "America/Santiago"), "2024-09-07")
    assert.isTrue(Calendar.dayExists(d("2024-09-08"), "America/Santiago"))
    assert.strictEqual(dayLength("2024-09-08", "America/Santiago"), 23)
  })

  it("America/Havana 2025-03-09 and Asia/Beirut 2025-03-30 start at 01:00 local", () => {
    // Verified: Havana 2025-03-08 23:59:59 (-05) -> 2025-03-09 01:00 (-04) at 05:00Z;
    // Beirut 2025-03-29 23:59:59 (+02) -> 2025-03-30 01:00 (+03) at 22:00Z.
    assert.strictEqual(wall(at("2025-03-09T05:00:00Z"), "America/Havana"), "2025-03-09 01:00:00.000")
    assert.strictEqual(wall(at("2025-03-29T21:59:59Z"), "Asia/Beirut"), "2025-03-29 23:59:59.000")
    assert.strictEqual(wall(at("2025-03-29T22:00:00Z"), "Asia/Beirut"), "2025-03-30 01:00:00.000")
    assert.strictEqual(Calendar.startOfDay(d("2025-03-09"), "America/Havana").toISOString(), "2025-03-09T05:00:00.000Z")
    assert.strictEqual(Calendar.startOfDay(d("2025-03-30"), "Asia/Beirut").toISOString(), "2025-03-29T22:00:00.000Z")
    assert.strictEqual(Calendar.localDate(at("2025-03-29T22:00:00Z"), "Asia/Beirut"), "2025-03-30")
  })

  it("a midnight that happens twice (Havana 2025-11-02) starts the day at its first occurrence", () => {
    // Verified: at 05:00Z the wall clock goes back from 2025-11-02 00:59:59 (-04) to 00:00 (-05).
    assert.strictEqual(wall(at("2025-11-02T04:00:00Z"), "America/Havana"), "2025-11-02 00:00:00.000")
    assert.strictEqual(wall(at("2025-11-02T05:00:00Z"), "America/Havana"), "2025-11-02 00:00:00.000")
    assert.strictEqual(Calendar.startOfDay(d("2025-11-02"), "America/Havana").toISOString(), "2025-11-02T04:00:00.000Z")
    assert.strictEqual(dayLength("2025-11-02", "America/Havana"), 25)
  })

  it("clocks set back at midnight (Santiago 2024-04-07) give the previous day 25 hours", () => {
    // Verified: at 03:00Z the wall clock goes back from 2024-04-06 23:59:59 (-03) to 23:00 (-04).
    assert.strictEqual(wall(at("2024-04-07T03:00:00Z"), "America/Santiago"), "2024-04-06 23:00:00.000")
    assert.strictEqual(
      Calendar.startOfDay(d("2024-04-07"), "America/Santiago").toISOString(),
      "2024-04-07T04:00:00.000Z"
    )
    assert.strictEqual(dayLength("2024-04-06", "America/Santiago"), 25)
  })
})

describe("half-hour, quarter-hour and 45-minute offsets", () => {
  it("Asia/Kolkata (+05:30) and Asia/Kathmandu (+05:45) turn the date at 18:30Z and 18:15Z", () => {
    assert.strictEqual(wall(at("2025-06-01T18:30:00Z"), "Asia/Kolkata"), "2025-06-02 00:00:00.000")
    assert.strictEqual(wall(at("2025-06-01T18:15:00Z"), "Asia/Kathmandu"), "2025-06-02 00:00:00.000")
    assert.strictEqual(Calendar.localDate(at("2025-06-01T18:29:59.999Z"), "Asia/Kolkata"), "2025-06-01")
    assert.strictEqual(Calendar.localDate(at("2025-06-01T18:30:00.000Z"), "Asia/Kolkata"), "2025-06-02")
    assert.strictEqual(Calendar.localDate(at("2025-06-01T18:14:59.999Z"), "Asia/Kathmandu"), "2025-06-01")
    assert.strictEqual(Calendar.localDate(at("2025-06-01T18:15:00.000Z"), "Asia/Kathmandu"), "2025-06-02")
    assert.strictEqual(Calendar.startOfDay(d("2025-06-02"), "Asia/Kolkata").toISOString(), "2025-06-01T18:30:00.000Z")
    assert.strictEqual(Calendar.startOfDay(d("2025-06-02"), "Asia/Kathmandu").toISOString(), "2025-06-01T18:15:00.000Z")
  })

  it("Pacific/Chatham is +12:45 in June and +13:45 in January, with 23/25-hour days at 02:45/03:45", () => {
    // Verified: 2025-04-06 03:44:59 (+13:45) -> 02:45 (+12:45) and 2025-09-28 02:44:59 (+12:45) -> 03:45 (+13:45), both at 14:00Z the day before.
    assert.strictEqual(wall(at("2025-04-05T14:00:00Z"), "Pacific/Chatham"), "2025-04-06 02:45:00.000")
    assert.strictEqual(wall(at("2025-09-27T14:00:00Z"), "Pacific/Chatham"), "2025-09-28 03:45:00.000")
    assert.strictEqual(
      Calendar.startOfDay(d("2025-06-02"), "Pacific/Chatham").toISOString(),
      "2025-06-01T11:15:00.000Z"
    )
    assert.strictEqual(
      Calendar.startOfDay(d("2025-01-15"), "Pacific/Chatham").toISOString(),
      "2025-01-14T10:15:00.000Z"
    )
    assert.strictEqual(dayLength("2025-04-06", "Pacific/Chatham"), 25)
    assert.strictEqual(dayLength("2025-09-28", "Pacific/Chatham"), 23)
  })
})

describe("the date line", () => {
  it("one instant is 2025-06-02 in Pacific/Kiritimati (+14) and 2025-05-31 in Pacific/Pago_Pago (-11)", () => {
    const t = at("2025-06-01T10:30:00Z")
    assert.strictEqual(wall(t, "Pacific/Kiritimati"), "2025-06-02 00:30:00.000")
    assert.strictEqual(wall(t, "Pacific/Pago_Pago"), "2025-05-31 23:30:00.000")
    assert.strictEqual(Calendar.localDate(t, "Pacific/Kiritimati"), "2025-06-02")
    assert.strictEqual(Calendar.localDate(t, "Pacific/Pago_Pago"), "2025-05-31")
    assert.strictEqual(
      Calendar.startOfDay(d("2025-06-02"), "Pacific/Kiritimati").toISOString(),
      "2025-06-01T10:00:00.000Z"
    )
    assert.strictEqual(
      Calendar.startOfDay(d("2025-06-01"), "Pacific/Pago_Pago").toISOString(),
      "2025-06-01T11:00:00.000Z"
    )
  })
})

describe("skipped dates", () => {
  it("Pacific/Apia skipped 2011-12-30: it does not exist, and 12-29 is followed by 12-31", () => {
    // Verified: at 2011-12-30T10:00Z the wall clock jumps from 2011-12-29 23:59:59 (-10) to 2011-12-31 00:00 (+14).
    assert.strictEqual(wall(at("2011-12-30T09:59:59Z"), "Pacific/Apia"), "2011-12-29 23:59:59.000")
    assert.strictEqual(wall(at("2011-12-30T10:00:00Z"), "Pacific/Apia"), "2011-12-31 00:00:00.000")
    const apia = "Pacific/Apia"
    assert.isFalse(Calendar.dayExists(d("2011-12-30"), apia))
    assert.isTrue(Calendar.dayExists(d("2011-12-29"), apia))
    assert.isTrue(Calendar.dayExists(d("2011-12-31"), apia))
    assert.isTrue(Calendar.dayExists(d("2011-12-30"), "UTC"))
    assert.strictEqual(Calendar.nextDay(d("2011-12-29"), apia), "2011-12-31")
    assert.strictEqual(Calendar.previousDay(d("2011-12-31"), apia), "2011-12-29")
    assert.strictEqual(Calendar.nextDay(d("2011-12-29"), "UTC"), "2011-12-30")
    assert.strictEqual(Calendar.startOfDay(d("2011-12-29"), apia).toISOString(), "2011-12-29T10:00:00.000Z")
    assert.strictEqual(Calendar.startOfDay(d("2011-12-31"), apia).toISOString(), "2011-12-30T10:00:00.000Z")
    // A skipped date "starts" when the next existing date does.
    assert.strictEqual(Calendar.startOfDay(d("2011-12-30"), apia).toISOString(), "2011-12-30T10:00:00.000Z")
    assert.strictEqual(Calendar.localDate(at("2011-12-30T09:59:59.999Z"), apia), "2011-12-29")
    assert.strictEqual(Calendar.localDate(at("2011-12-30T10:00:00.000Z"), apia), "2011-12-31")
  })
})

describe("day edges", () => {
  it("23:59:59.999 local belongs to the day, 00:00:00.000 to the next", () => {
    assert.strictEqual(wall(at("2025-01-15T04:59:59.999Z"), "America/New_York"), "2025-01-14 23:59:59.999")
    assert.strictEqual(Calendar.localDate(at("2025-01-15T04:59:59.999Z"), "America/New_York"), "2025-01-14")
    assert.strictEqual(Calendar.localDate(new Date(at("2025-01-15T05:00:00.000Z")), "America/New_York"), "2025-01-15")
    assert.strictEqual(Calendar.localDate(at("2025-06-30T23:59:59.999Z"), "UTC"), "2025-06-30")
    assert.strictEqual(Calendar.localDate(at("2025-07-01T00:00:00.000Z"), "UTC"), "2025-07-01")
  })

  it("throws a RangeError for an invalid instant or zone", () => {
    assert.throws(() => Calendar.localDate(new Date(NaN), "UTC"), RangeError)
    assert.throws(() => Calendar.localDate(0, "Mars/Olympus"), RangeError)
  })

  it("results do not depend on the host's time zone", () => {
    // Day starts are memoized, so each host zone gets dates not computed before. Verified gaps at
    // 00:00: Santiago 2025-09-07 (04:00Z), Havana 2026-03-08 (05:00Z), Beirut 2024-03-31 (2024-03-30T22:00Z).
    const cases = [
      ["Pacific/Apia", "2025-09-07", "America/Santiago", "2025-09-07T04:00:00.000Z"],
      ["America/Santiago", "2026-03-08", "America/Havana", "2026-03-08T05:00:00.000Z"],
      ["America/New_York", "2024-03-31", "Asia/Beirut", "2024-03-30T22:00:00.000Z"]
    ] as const
    const before = process.env.TZ
    try {
      for (const [host, date, zone, start] of cases) {
        assert.strictEqual(wall(at(start), zone), `${date} 01:00:00.000`)
        assert.strictEqual(wall(at(start) - 1, zone).slice(11), "23:59:59.999")
        process.env.TZ = host
        assert.strictEqual(Calendar.startOfDay(d(date), zone).toISOString(), start, host)
        assert.strictEqual(Calendar.localDate(at("2011-12-30T12:00:00Z"), "UTC"), "2011-12-30", host)
        assert.isTrue(Calendar.dayExists(d("2011-12-30"), "Etc/UTC"), host)
      }
    } finally {
      if (before === undefined) delete process.env.TZ
      else process.env.TZ = before
    }
  })
})

describe("calendar arithmetic", () => {
  it("addDays and daysBetween cross leap days, months and years", () => {
    assert.strictEqual(Calendar.addDays(d("2024-02-28"), 1), "2024-02-29")
    assert.strictEqual(Calendar.addDays(d("2024-02-29"), 1), "2024-03-01")
    assert.strictEqual(Calendar.addDays(d("2023-02-28"), 1), "2023-03-01")
    assert.strictEqual(Calendar.addDays(d("2027-01-01"), -1), "2026-12-31")
    assert.strictEqual(Calendar.daysBetween(d("2024-01-01"), d("2025-01-01")), 366)
    assert.strictEqual(Calendar.daysBetween(d("2025-01-01"), d("2024-01-01")), -366)
    assert.strictEqual(Calendar.daysBetween(d("1970-01-01"), d("2000-03-01")), 11017)
  })

  it("the ISO week of 2026-12-31 runs Monday 2026-12-28 to Sunday 2027-01-03", () => {
    const week = Calendar.isoWeek(d("2026-12-31"))
    assert.deepStrictEqual<ReadonlyArray<string>>(week, [
      "2026-12-28",
      "2026-12-29",
      "2026-12-30",
      "2026-12-31",
      "2027-01-01",
      "2027-01-02",
      "2027-01-03"
    ])
    assert.strictEqual(Calendar.isoWeek(d("2027-01-01"))[0], "2026-12-28")
    assert.deepStrictEqual(Calendar.isoWeek(d("2027-01-03")), week)
    assert.strictEqual(Calendar.isoWeek(d("2027-01-04"))[0], "2027-01-04")
    // Weekday names checked against Intl.
    const intlDay = (s: string) =>
      new Intl.DateTimeFormat("en-US", { timeZone: "UTC", weekday: "short" }).format(at(`${s}T12:00:00Z`))
    assert.deepStrictEqual(week.map(Calendar.weekdayLabel), ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
    assert.deepStrictEqual(week.map(intlDay), ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
    assert.strictEqual(Calendar.weekdayLabel(d("2024-02-29")), intlDay("2024-02-29"))
    assert.deepStrictEqual(week.map(Calendar.dayOfMonth), [28, 29, 30, 31, 1, 2, 3])
  })

  it("the metering month is taken in UTC", () => {
    const t = at("2026-01-31T23:30:00Z")
    assert.strictEqual(Calendar.localDate(t, "Pacific/Kiritimati"), "2026-02-01")
    assert.strictEqual(Calendar.month(t), "2026-01")
    assert.strictEqual(Calendar.month(new Date("2026-02-01T00:00:00Z")), "2026-02")
  })
})

const ZONES = [
  "UTC",
  "America/New_York",
  "Europe/London",
  "America/Santiago",
  "America/Havana",
  "Asia/Beirut",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Pacific/Chatham",
  "Pacific/Kiritimati",
  "Pacific/Pago_Pago",
  "Pacific/Apia"
] as const

describe("calendar properties", () => {
  it.prop(
    "every instant lies in its local date, which starts at startOfDay and ends where the next existing date starts",
    [fc.integer({ min: at("2010-01-01T00:00:00Z"), max: at("2030-12-31T00:00:00Z") }), fc.constantFrom(...ZONES)],
    ([t, zone]) => {
      const date = Calendar.localDate(t, zone)
      assert.strictEqual(wall(t, zone).slice(0, 10), date)
      const start = Calendar.startOfDay(date, zone).getTime()
      const end = Calendar.startOfDay(Calendar.nextDay(date, zone), zone).getTime()
      assert.isTrue(start <= t && t < end)
      assert.isTrue(Calendar.dayExists(date, zone))
      assert.strictEqual(Calendar.localDate(start, zone), date)
      assert.isTrue(Calendar.localDate(start - 1, zone) < date)
      assert.strictEqual(Calendar.localDate(end - 1, zone), date)
    },
    { fastCheck: { numRuns: 500 } }
  )
})
