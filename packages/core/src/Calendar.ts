/**
 * Calendar dates and time zones: the only module that maps instants to members' local dates
 * and back. Pure functions; zone rules come from the tz database shipped with the runtime.
 */
import { fromZonedTime } from "date-fns-tz"
import { Schema } from "effect"
import * as EpochDay from "./internal/epochDay.js"
import { intlKnowsZone, zoneDate, zoneDateHour } from "./internal/zoneDate.js"

const PATTERN = /^\d{4}-\d{2}-\d{2}$/

const isRealDate = (s: string): boolean => {
  const [y, m, d] = EpochDay.fields(s)
  return EpochDay.isCalendarDate(y, m, d)
}

/** A calendar date "YYYY-MM-DD" (proleptic Gregorian, years 0001..9999), with no zone attached. */
export const LocalDate = Schema.String.pipe(
  Schema.pattern(PATTERN),
  Schema.filter(isRealDate, {
    message: () => "a real calendar date YYYY-MM-DD (years 0001..9999)",
    jsonSchema: { format: "date" }
  }),
  Schema.brand("LocalDate")
).annotations({ identifier: "LocalDate", description: "A calendar date YYYY-MM-DD (no time, no zone)" })
export type LocalDate = typeof LocalDate.Type

/** Brands a string as a LocalDate; throws a RangeError when it is not a real calendar date. */
export const unsafeLocalDate = (s: string): LocalDate => {
  // Checked by hand rather than through a Schema decode: storage adapters call this per row.
  if (PATTERN.test(s) && isRealDate(s)) return s as LocalDate
  throw new RangeError(`Not a LocalDate (a real calendar date YYYY-MM-DD): ${JSON.stringify(s)}`)
}

// Values computed here are valid by construction, so they skip the schema.
const brand = (s: string): LocalDate => s as LocalDate
const ofEpochDay = (n: number): LocalDate => brand(EpochDay.fromEpochDay(n))

// Offsets ("+05:00", "-0500") are not zones: they know nothing of DST, so a member stored with
// one would silently drift. Newer runtimes accept them in Intl, hence the explicit shape check.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/

/** True for an IANA zone name or link the runtime knows (and "UTC"); false for offsets and garbage. */
export const isValidZone = (zone: string): boolean => ZONE_NAME.test(zone) && intlKnowsZone(zone)

const toMs = (instant: Date | number): number => (typeof instant === "number" ? instant : instant.getTime())

/**
 * The local calendar date of an instant in a zone. Throws a RangeError for an invalid instant or
 * an unknown zone (check zones with `isValidZone` at the edge).
 */
export const localDate = (instant: Date | number, zone: string): LocalDate => brand(zoneDate(toMs(instant), zone))

// The local date never goes backwards as time goes forward (DST and date-line moves only skip or
// repeat wall times), so "the first instant whose local date is >= D" is well defined and can be
// found by bisection when the fast guess is wrong.
const reaches = (ms: number, date: LocalDate, zone: string): boolean => zoneDate(ms, zone) >= date
const isFirstInstant = (ms: number, date: LocalDate, zone: string): boolean =>
  Number.isFinite(ms) && reaches(ms, date, zone) && !reaches(ms - 1, date, zone)

const HOUR = 3_600_000
// Far wider than any UTC offset ever used (LMT offsets stay under 16 h), so the bracket holds.
const BRACKET = 36 * HOUR

const bisect = (date: LocalDate, zone: string): number => {
  const utcMidnight = EpochDay.toEpochDay(date) * 24 * HOUR
  let lo = utcMidnight - BRACKET
  let hi = utcMidnight + BRACKET
  if (reaches(lo, date, zone) || !reaches(hi, date, zone)) {
    throw new RangeError(`No start of day found for ${date} in ${zone}`)
  }
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2)
    if (reaches(mid, date, zone)) hi = mid
    else lo = mid
  }
  return hi
}

// Every member of a zone shares the same day boundaries, and the due instants of a whole
// population cluster on a few dates, so day starts are memoized (bounded, cleared when full).
const MAX_MEMO = 8192
const dayStarts = new Map<string, { readonly ms: number; readonly exists: boolean }>()

const dayStart = (date: LocalDate, zone: string): { readonly ms: number; readonly exists: boolean } => {
  const key = `${zone} ${date}`
  let hit = dayStarts.get(key)
  if (hit === undefined) {
    // date-fns-tz's guess is right except around transitions at midnight; it is always verified.
    const guess = fromZonedTime(`${date}T00:00:00`, zone).getTime()
    const ms = isFirstInstant(guess, date, zone) ? guess : bisect(date, zone)
    hit = { ms, exists: zoneDate(ms, zone) === date }
    if (dayStarts.size >= MAX_MEMO) dayStarts.clear()
    dayStarts.set(key, hit)
  }
  return hit
}

/**
 * The instant `date` starts in `zone`: local midnight, or where midnight does not exist (DST gap
 * at 00:00) the first existing instant of the date; where midnight happens twice (clocks set
 * back at 01:00) the first one. For a date the zone skipped (`dayExists` false) it is the start
 * of the next existing date.
 */
export const startOfDay = (date: LocalDate, zone: string): Date => new Date(dayStart(date, zone).ms)

/** False for a date the zone skipped entirely (Pacific/Apia 2011-12-30). */
export const dayExists = (date: LocalDate, zone: string): boolean => dayStart(date, zone).exists

// The calculus steps over a few hundred distinct dates at a time, by a day (the next period, a
// gap it judges) or by a week (a weekly period's end): those shifts are remembered per date rather
// than parsed and formatted at every step.
const SHIFTS = 7
const shifted = Array.from({ length: 2 * SHIFTS + 1 }, () => new Map<string, LocalDate>())

/** Pure calendar arithmetic: `n` days after `date` (negative for before); n must be an integer. */
export const addDays = (date: LocalDate, n: number): LocalDate => {
  if (n === 0 || n > SHIFTS || n < -SHIFTS) return ofEpochDay(EpochDay.toEpochDay(date) + n)
  const memo = shifted[n + SHIFTS]!
  let to = memo.get(date)
  if (to === undefined) {
    to = ofEpochDay(EpochDay.toEpochDay(date) + n)
    if (memo.size >= MAX_MEMO) memo.clear()
    memo.set(date, to)
  }
  return to
}

/** Calendar days from `from` to `to` (negative when `to` is earlier). */
export const daysBetween = (from: LocalDate, to: LocalDate): number =>
  EpochDay.toEpochDay(to) - EpochDay.toEpochDay(from)

// A zone skips at most one day at a time in practice; the bound only guards against a bug.
const MAX_SKIPPED = 7

const step = (date: LocalDate, zone: string, by: 1 | -1): LocalDate => {
  let next = addDays(date, by)
  for (let i = 0; i < MAX_SKIPPED && !dayExists(next, zone); i++) next = addDays(next, by)
  return next
}

/** The next date after `date` that exists in `zone` (Pacific/Apia 2011-12-29 -> 2011-12-31). */
export const nextDay = (date: LocalDate, zone: string): LocalDate => step(date, zone, 1)

/** The last date before `date` that exists in `zone` (Pacific/Apia 2011-12-31 -> 2011-12-29). */
export const previousDay = (date: LocalDate, zone: string): LocalDate => step(date, zone, -1)

/** The seven dates Monday..Sunday of the ISO week containing `date` (weeks may span two years). */
export const isoWeek = (date: LocalDate): ReadonlyArray<LocalDate> => {
  const n = EpochDay.toEpochDay(date)
  const monday = n - EpochDay.isoWeekday(n) + 1
  return Array.from({ length: 7 }, (_, i) => ofEpochDay(monday + i))
}

const LABELS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] as const

/** The ISO weekday of a date: 1 (Monday) .. 7 (Sunday). */
export const isoWeekday = (date: LocalDate): number => EpochDay.isoWeekday(EpochDay.toEpochDay(date))

// A weekly streak asks for the week of every active day it counts.
const mondays = new Map<string, LocalDate>()

/** The Monday of the ISO week containing `date`. */
export const weekStart = (date: LocalDate): LocalDate => {
  let monday = mondays.get(date)
  if (monday === undefined) {
    const n = EpochDay.toEpochDay(date)
    monday = ofEpochDay(n - EpochDay.isoWeekday(n) + 1)
    if (mondays.size >= MAX_MEMO) mondays.clear()
    mondays.set(date, monday)
  }
  return monday
}

/** The first day of the month of `date`. */
export const monthStart = (date: LocalDate): LocalDate => brand(`${date.slice(0, 8)}01`)

/** The last day of the month of `date` (29 February in a leap year). */
export const monthEnd = (date: LocalDate): LocalDate => {
  const [y, m] = EpochDay.fields(date)
  return brand(EpochDay.format(y, m, EpochDay.daysInMonth(y, m)))
}

/**
 * The activity day of an instant (docs/streak-semantics.md#streak-policies): its local date in
 * `zone`, shifted back by `dayStartHour` hours of wall time, so with 4, 02:30 on the 28th belongs
 * to the 27th.
 */
export const activityDay = (instant: Date | number, zone: string, dayStartHour: number): LocalDate => {
  if (dayStartHour === 0) return localDate(instant, zone)
  const { date, hour } = zoneDateHour(toMs(instant), zone)
  return hour < dayStartHour ? addDays(brand(date), -1) : brand(date)
}

// True once the wall time at `ms` is at or past `hour` o'clock on `date` (or on a later date).
const wallReaches = (ms: number, date: LocalDate, hour: number, zone: string): boolean => {
  const wall = zoneDateHour(ms, zone)
  return wall.date > date || (wall.date === date && wall.hour >= hour)
}

const QUARTER = 15 * 60_000
const wallStarts = new Map<string, number>()

const wallStart = (date: LocalDate, hour: number, zone: string): number => {
  const key = `${zone} ${date} ${hour}`
  const hit = wallStarts.get(key)
  if (hit !== undefined) return hit
  let ms: number
  const hh = String(hour).padStart(2, "0")
  const guess = fromZonedTime(`${date}T${hh}:00:00`, zone).getTime()
  // The guess is right unless the hour is repeated (clocks set back) or falls in a gap: then
  // walk from the start of the date by quarter hours (offsets change by whole quarters) and
  // bisect the last quarter, which finds the first instant whatever the transitions.
  if (
    Number.isFinite(guess) && wallReaches(guess, date, hour, zone) && !wallReaches(guess - 1, date, hour, zone) &&
    !wallReaches(guess - HOUR, date, hour, zone)
  ) {
    ms = guess
  } else {
    let lo = dayStart(date, zone).ms - 1
    let hi = lo + 1
    // A day has at most 27 hours of wall time; the bound only guards against a bug.
    for (let i = 0; !wallReaches(hi, date, hour, zone); i++) {
      if (i > 27 * 4) throw new RangeError(`No ${hour}:00 found on ${date} in ${zone}`)
      lo = hi
      hi += QUARTER
    }
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2)
      if (wallReaches(mid, date, hour, zone)) hi = mid
      else lo = mid
    }
    ms = hi
  }
  if (wallStarts.size >= MAX_MEMO) wallStarts.clear()
  wallStarts.set(key, ms)
  return ms
}

/**
 * The first instant at or after which the wall time in `zone` reads `hour` o'clock on `date`:
 * where that hour does not exist (DST gap) the first instant after the gap, where it happens twice
 * the first time. `startOfHour(date, 0, zone)` is `startOfDay(date, zone)`.
 */
export const startOfHour = (date: LocalDate, hour: number, zone: string): Date =>
  hour === 0 ? startOfDay(date, zone) : new Date(wallStart(date, hour, zone))

/** The instant the activity day `date` starts when days start at `dayStartHour`. */
export const startOfActivityDay = (date: LocalDate, zone: string, dayStartHour: number): Date =>
  startOfHour(date, dayStartHour, zone)

/** False for an activity day that has no instant in `zone` (a date the zone skipped, at that hour). */
export const activityDayExists = (date: LocalDate, zone: string, dayStartHour: number): boolean =>
  dayStartHour === 0
    ? dayExists(date, zone)
    : wallStart(date, dayStartHour, zone) < wallStart(addDays(date, 1), dayStartHour, zone)

/** English short weekday of a date: "Mon".."Sun". */
export const weekdayLabel = (date: LocalDate): string => LABELS[EpochDay.isoWeekday(EpochDay.toEpochDay(date)) - 1]

/** Day of the month, 1..31. */
export const dayOfMonth = (date: LocalDate): number => EpochDay.fields(date)[2]

/** The metering month "YYYY-MM" of an instant, always in UTC (docs/streak-semantics.md#metering-month). */
export const month = (instant: Date | number): string => {
  const ms = toMs(instant)
  if (!Number.isFinite(ms)) throw new RangeError("Invalid instant")
  return zoneDate(ms, "UTC").slice(0, 7)
}
