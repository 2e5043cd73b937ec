/**
 * Proleptic Gregorian calendar arithmetic on "YYYY-MM-DD" strings via day numbers since
 * 1970-01-01. Integer maths only: `Date` and date-fns read the host's time zone, dates must not.
 */

/** The supported years: four digits, and no year 0 (Intl renders it as 1 BC). */
export const MIN_YEAR = 1
export const MAX_YEAR = 9999

const isLeapYear = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0

export const daysInMonth = (y: number, m: number): number =>
  m === 2 ? (isLeapYear(y) ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31

/** True for a real calendar date in the supported years (leap days included). */
export const isCalendarDate = (y: number, m: number, d: number): boolean =>
  Number.isInteger(y) && Number.isInteger(m) && Number.isInteger(d) &&
  y >= MIN_YEAR && y <= MAX_YEAR && m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m)

/** Days since 1970-01-01 (Howard Hinnant's days_from_civil, exact for every Gregorian date). */
export const fromCivil = (y: number, m: number, d: number): number => {
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

/** The inverse of `fromCivil` (Hinnant's civil_from_days). */
export const toCivil = (n: number): readonly [y: number, m: number, d: number] => {
  const z = n + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1
  const m = mp < 10 ? mp + 3 : mp - 9
  return [m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d]
}

export const MIN_DAY = fromCivil(MIN_YEAR, 1, 1)
export const MAX_DAY = fromCivil(MAX_YEAR, 12, 31)

/** Reads the fields of a "YYYY-MM-DD" string; the caller has validated its shape. */
export const fields = (s: string): readonly [y: number, m: number, d: number] => [
  Number(s.slice(0, 4)),
  Number(s.slice(5, 7)),
  Number(s.slice(8, 10))
]

export const toEpochDay = (s: string): number => {
  const [y, m, d] = fields(s)
  return fromCivil(y, m, d)
}

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

export const format = (y: number, m: number, d: number): string => `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`

/** Formats a day number; throws a RangeError outside the supported years. */
export const fromEpochDay = (n: number): string => {
  if (!Number.isInteger(n) || n < MIN_DAY || n > MAX_DAY) {
    throw new RangeError(`Date out of range (years ${MIN_YEAR}..${MAX_YEAR}): day ${n}`)
  }
  const [y, m, d] = toCivil(n)
  return format(y, m, d)
}

/** ISO weekday, Monday = 1 .. Sunday = 7 (1970-01-01 was a Thursday). */
export const isoWeekday = (n: number): number => ((((n + 3) % 7) + 7) % 7) + 1
