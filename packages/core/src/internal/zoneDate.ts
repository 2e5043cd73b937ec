/**
 * The local calendar date of an instant in an IANA zone, straight from Intl (the tz database
 * shipped with the runtime). date-fns-tz's `formatInTimeZone`/`toZonedTime` rebuild the wall
 * time in the host's zone, so their dates can shift when the process runs in a zone with DST
 * gaps or skipped days (measured: host TZ=Pacific/Apia moves 2011-12-30 UTC to 2011-12-31).
 */
import { format, MAX_DAY, MIN_DAY } from "./epochDay.js"

// Building an Intl.DateTimeFormat costs far more than using one, so keep one per zone name.
// Bounded, because zone names come from clients: a flood of distinct spellings must not grow it.
const MAX_CACHED = 1024
const formatters = new Map<string, Intl.DateTimeFormat>()

const make = (zone: string): Intl.DateTimeFormat =>
  new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    calendar: "gregory",
    numberingSystem: "latn",
    year: "numeric",
    month: "numeric",
    day: "numeric"
  })

/** `make(zone)` kept per zone in `cache`, which starts over when full. */
const cachedBy = (
  cache: Map<string, Intl.DateTimeFormat>,
  zone: string,
  make: (zone: string) => Intl.DateTimeFormat
): Intl.DateTimeFormat => {
  let f = cache.get(zone)
  if (f === undefined) {
    f = make(zone)
    if (cache.size >= MAX_CACHED) cache.clear()
    cache.set(zone, f)
  }
  return f
}

/** The cached formatter of a zone; throws a RangeError for a zone Intl does not know. */
export const formatter = (zone: string): Intl.DateTimeFormat => cachedBy(formatters, zone, make)

/** True when Intl accepts the zone name (IANA names and links, case-insensitively). */
export const intlKnowsZone = (zone: string): boolean => {
  if (formatters.has(zone)) return true
  try {
    formatter(zone)
    return true
  } catch {
    return false
  }
}

// Instants whose local date is within years 1..9999 in every zone (offsets stay under a day).
// Checking the instant spares an era field, which makes Intl twice as slow.
const DAY = 86_400_000
const MIN_MS = (MIN_DAY + 1) * DAY
const MAX_MS = MAX_DAY * DAY - 1

// "M/D/YYYY": `format` costs half of `formatToParts`, and this is the hot path of every action.
const US_DATE = /^(\d{1,2})\/(\d{1,2})\/(\d{1,4})$/

const fromParts = (f: Intl.DateTimeFormat, ms: number): string => {
  const get = (type: string) => Number(f.formatToParts(ms).find((p) => p.type === type)?.value)
  return format(get("year"), get("month"), get("day"))
}

const formatDate = (ms: number, zone: string): string => {
  const f = formatter(zone)
  const m = US_DATE.exec(f.format(ms))
  // Should an ICU release ever decorate the short form, the structured form still works.
  return m === null ? fromParts(f, ms) : format(Number(m[3]), Number(m[1]), Number(m[2]))
}

// Most instants asked about are "now", so each zone remembers the date of its last quarter hour.
// A quarter hour asked about a second time is checked once: when its first and last millisecond
// have the same date, every instant between them has it too (the local date never goes backwards
// as time goes forward, whatever the zone's offset, even the odd ones of history). One-off
// instants (a bisection, a report's history) cost one format, as without the memo.
const QUARTER = 15 * 60_000
/** date: the quarter's date; null: the quarter spans two dates; undefined: seen once, not checked. */
const lastQuarter = new Map<string, { readonly quarter: number; readonly date: string | null | undefined }>()

const dateOfQuarter = (quarter: number, date: string, zone: string): string | null => {
  const start = quarter * QUARTER
  const end = start + QUARTER - 1
  return start >= MIN_MS && end <= MAX_MS && formatDate(start, zone) === date && formatDate(end, zone) === date
    ? date
    : null
}

/** "YYYY-MM-DD" of the instant `ms` in `zone`; throws a RangeError outside years 1..9999. */
export const zoneDate = (ms: number, zone: string): string => {
  if (!(ms >= MIN_MS && ms <= MAX_MS)) throw new RangeError(`Invalid or out-of-range instant: ${ms}`)
  const quarter = Math.floor(ms / QUARTER)
  const seen = lastQuarter.get(zone)
  if (seen !== undefined && seen.quarter === quarter && typeof seen.date === "string") return seen.date
  const date = formatDate(ms, zone)
  if (seen !== undefined && seen.quarter === quarter) {
    if (seen.date === undefined) lastQuarter.set(zone, { quarter, date: dateOfQuarter(quarter, date, zone) })
  } else {
    if (lastQuarter.size >= MAX_CACHED) lastQuarter.clear()
    lastQuarter.set(zone, { quarter, date: undefined })
  }
  return date
}

// A second formatter per zone, with the hour, for days that start at another hour than midnight.
const hourFormatters = new Map<string, Intl.DateTimeFormat>()

const hourFormatter = (zone: string): Intl.DateTimeFormat =>
  cachedBy(hourFormatters, zone, (timeZone) =>
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      calendar: "gregory",
      numberingSystem: "latn",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      hourCycle: "h23"
    }))

/** The local date and hour (0..23) of the instant `ms` in `zone`. */
export const zoneDateHour = (ms: number, zone: string): { readonly date: string; readonly hour: number } => {
  if (!(ms >= MIN_MS && ms <= MAX_MS)) throw new RangeError(`Invalid or out-of-range instant: ${ms}`)
  const parts = hourFormatter(zone).formatToParts(ms)
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  return { date: format(get("year"), get("month"), get("day")), hour: get("hour") % 24 }
}
