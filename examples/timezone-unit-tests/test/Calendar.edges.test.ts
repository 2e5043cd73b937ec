/**
 * Time-zone edge cases of `Calendar`, written as a user would pin down the cases their members
 * meet. `Calendar` is pure: instants in, local dates out (and back), no clock, no I/O.
 */
import { assert, describe, it } from "@effect/vitest"
import { Calendar } from "@streaks/core"

const day = Calendar.unsafeLocalDate
const at = (iso: string) => new Date(iso)
const HOUR = 3_600_000

/** Hours between the start of `date` and the start of the next date, in `zone`. */
const hoursIn = (date: string, zone: string) =>
  (Calendar.startOfDay(Calendar.nextDay(day(date), zone), zone).getTime() -
    Calendar.startOfDay(day(date), zone).getTime()) / HOUR

describe("a DST gap at midnight: America/Santiago on 2024-09-08", () => {
  // Chile moved from -04 to -03 at 00:00 local: the clock jumped from 23:59:59 to 01:00.
  it("the last instant of 2024-09-07 is 03:59:59.999Z and the next one is already 2024-09-08", () => {
    assert.strictEqual(Calendar.localDate(at("2024-09-08T03:59:59.999Z"), "America/Santiago"), "2024-09-07")
    assert.strictEqual(Calendar.localDate(at("2024-09-08T04:00:00.000Z"), "America/Santiago"), "2024-09-08")
  })

  it("the day starts at 01:00 local (04:00Z), the first instant that exists, and lasts 23 hours", () => {
    assert.strictEqual(
      Calendar.startOfDay(day("2024-09-08"), "America/Santiago").toISOString(),
      "2024-09-08T04:00:00.000Z"
    )
    assert.isTrue(Calendar.dayExists(day("2024-09-08"), "America/Santiago"))
    assert.strictEqual(hoursIn("2024-09-08", "America/Santiago"), 23)
  })
})

describe("a 25-hour day: Europe/London on 2024-10-27", () => {
  // BST ended at 02:00 BST: 01:00-01:59 happened twice, once at +01 and once at +00.
  it("starts at 23:00Z the day before, ends at 00:00Z the day after, so it lasts 25 hours", () => {
    assert.strictEqual(
      Calendar.startOfDay(day("2024-10-27"), "Europe/London").toISOString(),
      "2024-10-26T23:00:00.000Z"
    )
    assert.strictEqual(
      Calendar.startOfDay(day("2024-10-28"), "Europe/London").toISOString(),
      "2024-10-28T00:00:00.000Z"
    )
    assert.strictEqual(hoursIn("2024-10-27", "Europe/London"), 25)
  })

  it("both 01:30s (00:30Z and 01:30Z) are the same local date", () => {
    assert.strictEqual(Calendar.localDate(at("2024-10-27T00:30:00Z"), "Europe/London"), "2024-10-27")
    assert.strictEqual(Calendar.localDate(at("2024-10-27T01:30:00Z"), "Europe/London"), "2024-10-27")
  })
})

describe("the date line: Pacific/Kiritimati (+14) and Pacific/Pago_Pago (-11)", () => {
  it("one instant falls on dates two days apart: 2024-06-16 on Kiritimati, 2024-06-14 in Pago Pago", () => {
    const instant = at("2024-06-15T10:30:00Z")
    assert.strictEqual(Calendar.localDate(instant, "Pacific/Kiritimati"), "2024-06-16")
    assert.strictEqual(Calendar.localDate(instant, "UTC"), "2024-06-15")
    assert.strictEqual(Calendar.localDate(instant, "Pacific/Pago_Pago"), "2024-06-14")
  })

  it("Kiritimati's day starts 25 hours before Pago Pago's day of the same date", () => {
    const kiritimati = Calendar.startOfDay(day("2024-06-15"), "Pacific/Kiritimati")
    const pagoPago = Calendar.startOfDay(day("2024-06-15"), "Pacific/Pago_Pago")
    assert.strictEqual(kiritimati.toISOString(), "2024-06-14T10:00:00.000Z")
    assert.strictEqual(pagoPago.toISOString(), "2024-06-15T11:00:00.000Z")
    assert.strictEqual((pagoPago.getTime() - kiritimati.getTime()) / HOUR, 25)
  })
})

describe("a skipped date: Pacific/Apia on 2011-12-30", () => {
  // Samoa moved across the date line: 2011-12-29 23:59:59 (-10) was followed by 2011-12-31 00:00 (+14).
  it("2011-12-30 never existed there, but exists everywhere else", () => {
    assert.isFalse(Calendar.dayExists(day("2011-12-30"), "Pacific/Apia"))
    assert.isTrue(Calendar.dayExists(day("2011-12-30"), "Pacific/Pago_Pago"))
  })

  it("the day after 2011-12-29 is 2011-12-31, and back again", () => {
    assert.strictEqual(Calendar.nextDay(day("2011-12-29"), "Pacific/Apia"), "2011-12-31")
    assert.strictEqual(Calendar.previousDay(day("2011-12-31"), "Pacific/Apia"), "2011-12-29")
    assert.strictEqual(Calendar.localDate(at("2011-12-30T09:59:59.999Z"), "Pacific/Apia"), "2011-12-29")
    assert.strictEqual(Calendar.localDate(at("2011-12-30T10:00:00.000Z"), "Pacific/Apia"), "2011-12-31")
  })
})

describe("zones at the edge of the API", () => {
  it("IANA names are zones; bare offsets are not (they know no DST)", () => {
    assert.isTrue(Calendar.isValidZone("America/Santiago"))
    assert.isTrue(Calendar.isValidZone("UTC"))
    assert.isFalse(Calendar.isValidZone("+02:00"))
    assert.isFalse(Calendar.isValidZone("Mars/Olympus_Mons"))
  })
})
