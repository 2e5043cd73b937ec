/**
 * The wire bodies of the ingest doors (docs/api.md#record-an-action-post-v1e-and-post-v1servere,
 * #record-an-action-from-an-automation-post-v1webhooksitekeye, #post-programsprogramidevents) as
 * `Schema`s shared by the HTTP layer and by embedders, and their normalisation into one `Action`
 * command.
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import * as Calendar from "./Calendar.js"
import { EventType, Source } from "./Domain.js"
import { InvalidBody } from "./Errors.js"
import * as Ids from "./Ids.js"
import { UserHash } from "./Ids.js"

/** A `ts` may run this far ahead of the server clock (client clock skew); further is refused. */
export const maxFutureSkewMillis = 5 * 60 * 1000

// ISO 8601 extended format with an explicit zone designator: without one, the instant would
// depend on the server's zone. Seconds and fractions are optional, as ISO allows.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):(\d{2}))$/

const daysInMonth = (y: number, m: number): number => new Date(Date.UTC(y, m, 0)).getUTCDate()

/**
 * The instant of a strict ISO 8601 date-time carrying `Z` or a `±hh:mm` offset, or undefined.
 * Every field is range-checked (no rolling of 2024-02-30 into March, no leap second, no 24:00).
 */
export const parseTimestamp = (s: string): Date | undefined => {
  const m = TIMESTAMP.exec(s)
  if (m === null) return undefined
  const [y, mo, d, h, mi] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number]
  const sec = m[6] === undefined ? 0 : Number(m[6])
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000)
  const offH = m[10] === undefined ? 0 : Number(m[10])
  const offM = m[11] === undefined ? 0 : Number(m[11])
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return undefined
  if (h > 23 || mi > 59 || sec > 59 || offH > 23 || offM > 59) return undefined
  const utc = Date.UTC(y, mo - 1, d, h, mi, sec, ms)
  // Date.UTC maps years 0..99 to 1900..1999; put such years back.
  const base = y < 100 ? new Date(utc).setUTCFullYear(y) : utc
  const sign = m[9] === "-" ? -1 : 1
  const instant = base - sign * (offH * 60 + offM) * 60_000
  return Number.isFinite(instant) ? new Date(instant) : undefined
}

// Length limits of the schemas' fields.
const EVENT_KEY_MAX = 128
const IDEMPOTENCY_KEY_MAX = 255
const LABEL_MAX = 256
// Ids (siteKeys among them) are at most 64 characters; timestamps and zone names far less.
const SITE_KEY_MAX = 64
const TIMESTAMP_MAX = 64
const TIME_ZONE_MAX = 64
// A string `error` is bounded in bytes by its part limit (413); in characters, by the body's 64 KiB.
const ERROR_TEXT_MAX = 64 * 1024

/** An event key as programs configure it: 1..128 characters, matched exactly. */
export const EventKey = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(EVENT_KEY_MAX, { message: () => `must be at most ${EVENT_KEY_MAX} characters` })
)

export const IdempotencyKey = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(IDEMPOTENCY_KEY_MAX, { message: () => `must be at most ${IDEMPOTENCY_KEY_MAX} characters` })
)

/**
 * The earliest accepted `ts`: 1970-01-01T00:00:00Z. The time-zone database is reliable from then
 * on, and everything accepted must count correctly
 * (docs/api.md#record-an-action-post-v1e-and-post-v1servere).
 */
export const earliestMillis = 0

/** The instant of a `ts` that is a valid timestamp no earlier than 1970, else undefined. */
const acceptedTs = (s: string): Date | undefined => {
  const d = parseTimestamp(s)
  return d !== undefined && d.getTime() >= earliestMillis ? d : undefined
}

/** `ts` on the wire: kept a string (so OpenAPI shows it as sent), validated by `parseTimestamp`. */
export const Timestamp = Schema.String.pipe(
  Schema.maxLength(TIMESTAMP_MAX, { message: () => `must be at most ${TIMESTAMP_MAX} characters` }),
  Schema.filter((s) => acceptedTs(s) !== undefined, {
    message: () => "must be an ISO 8601 date-time with Z or an offset, no earlier than 1970-01-01T00:00:00Z"
  })
)

const wellFormed = Ids.isWellFormedText

/**
 * Whether every string in a parsed JSON value (object keys included, at any depth) is text that
 * can be stored faithfully: no U+0000 and no unpaired UTF-16 surrogate. Such text is refused with
 * INVALID_BODY on every route (docs/api.md#text-hygiene): two different ids could otherwise collide.
 */
export const isCleanText = (u: unknown): boolean => {
  if (typeof u === "string") return wellFormed(u)
  if (typeof u !== "object" || u === null) return true
  // A walk with its own stack: a body nested deeper than the call stack is still checked.
  const pending: Array<unknown> = [u]
  while (pending.length > 0) {
    const v = pending.pop()
    if (typeof v === "string") {
      if (!wellFormed(v)) return false
    } else if (Array.isArray(v)) {
      for (const item of v) pending.push(item)
    } else if (typeof v === "object" && v !== null) {
      for (const key in v) {
        if (!wellFormed(key)) return false
        pending.push((v as Record<string, unknown>)[key])
      }
    }
  }
  return true
}

/** The answer to text that `isCleanText` refuses. */
export const uncleanText = (): InvalidBody =>
  new InvalidBody({ message: "body: contains U+0000 or an unpaired UTF-16 surrogate" })

/** An IANA zone name ("Europe/Paris", "UTC"); bare offsets are refused (they know no DST). */
export const TimeZone = Schema.String.pipe(
  Schema.maxLength(TIME_ZONE_MAX, { message: () => `must be at most ${TIME_ZONE_MAX} characters` }),
  Schema.filter(Calendar.isValidZone, { message: () => "must be an IANA time zone name, e.g. Europe/Paris" })
)

/** A JSON object (not an array, not null): meta and the widget's analytics parts. */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

// Free-text labels feed source breakdowns; the bound keeps junk out of reports.
const Label = Schema.String.pipe(
  Schema.maxLength(LABEL_MAX, { message: () => `must be at most ${LABEL_MAX} characters` })
)

const common = {
  userHash: UserHash,
  idempotencyKey: Schema.optional(IdempotencyKey),
  ts: Schema.optional(Timestamp),
  tz: Schema.optional(TimeZone),
  meta: Schema.optional(JsonObject),
  externalService: Schema.optional(Label),
  integrationId: Schema.optional(Label)
}

/**
 * Body of `POST /v1/e` and `POST /v1/server/e`
 * (docs/api.md#record-an-action-post-v1e-and-post-v1servere). Required: `siteKey`, `userHash`, and
 * `event` or its legacy alias `kind` (both present and different → INVALID_BODY).
 */
export const EventRecord = Schema.Struct({
  siteKey: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(SITE_KEY_MAX, { message: () => `must be at most ${SITE_KEY_MAX} characters` })
  ),
  ...common,
  event: Schema.optional(EventKey),
  kind: Schema.optional(EventKey),
  eventType: Schema.optional(EventType),
  sessionId: Schema.optional(Label),
  source: Schema.optional(Source),
  test: Schema.optional(Schema.Boolean),
  details: Schema.optional(JsonObject),
  performance: Schema.optional(JsonObject),
  error: Schema.optional(Schema.Union(Schema.String.pipe(Schema.maxLength(ERROR_TEXT_MAX)), JsonObject)),
  consent: Schema.optional(JsonObject)
}).pipe(
  Schema.filter((r) => {
    if (r.event === undefined && r.kind === undefined) {
      return { path: ["event"], message: "is missing (send event, or its legacy alias kind)" }
    }
    if (r.event !== undefined && r.kind !== undefined && r.event !== r.kind) {
      return { path: ["kind"], message: "differs from event (kind is only an alias of event)" }
    }
    return true
  })
).annotations({ identifier: "EventRecord" })
export type EventRecord = typeof EventRecord.Type

/**
 * Body of `POST /v1/webhook/:siteKey/e`
 * (docs/api.md#record-an-action-from-an-automation-post-v1webhooksitekeye): `event` and `userHash`
 * required.
 */
export const WebhookEvent = Schema.Struct({
  ...common,
  event: EventKey,
  siteKey: Schema.optional(
    Schema.String.pipe(Schema.maxLength(SITE_KEY_MAX, { message: () => `must be at most ${SITE_KEY_MAX} characters` }))
  )
}).annotations({ identifier: "WebhookEvent" })
export type WebhookEvent = typeof WebhookEvent.Type

/**
 * Body of `POST /v1/api/programs/{programId}/events` (docs/api.md#post-programsprogramidevents):
 * `userHash` required.
 */
export const CountAction = Schema.Struct({
  ...common,
  test: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "CountAction" })
export type CountAction = typeof CountAction.Type

/**
 * One received action, whichever door it came through: what `Ingest.record` consumes. Absent
 * optional fields are `undefined`; `ts` undefined means "at receipt".
 */
export interface Action {
  /** The siteKey named in the body (webhook: optional, checked against the URL's). */
  readonly siteKey?: string | undefined
  readonly userHash: UserHash
  /** The event key; undefined on the customer REST door, where the path names the program. */
  readonly event?: string | undefined
  readonly eventType: EventType
  readonly ts?: Date | undefined
  readonly tz?: string | undefined
  readonly idempotencyKey?: string | undefined
  readonly sessionId?: string | undefined
  readonly source?: Source | undefined
  readonly externalService?: string | undefined
  readonly integrationId?: string | undefined
  /** A dashboard or test action: counted on the test ledger, never makes a program live. */
  readonly test: boolean
  /** Analytics parts as received (meta, details, performance, error, consent), if any. */
  readonly extra?: Readonly<Record<string, unknown>> | undefined
}

const extraOf = (parts: Record<string, unknown>): Record<string, unknown> | undefined => {
  let present: Record<string, unknown> | undefined
  for (const key in parts) if (parts[key] !== undefined) (present ??= {})[key] = parts[key]
  return present
}

const tsOf = (ts: string | undefined): Date | undefined => (ts === undefined ? undefined : acceptedTs(ts))

/** Whether an action is dated more than {@link maxFutureSkewMillis} after `now`. */
export const isInFuture = (action: { readonly ts?: Date | undefined }, now: Date): boolean =>
  action.ts !== undefined && action.ts.getTime() > now.getTime() + maxFutureSkewMillis

/** The answer to an action dated too far ahead. */
export const tooFarAhead = (): InvalidBody => new InvalidBody({ message: "ts: is more than 5 minutes in the future" })

/**
 * The answer to an action whose `ts` cannot be accepted at `now` (over 5 minutes ahead, or before
 * 1970), else undefined: for actions built by hand, which skipped the decode helpers.
 */
export const checkTimestamp = (action: { readonly ts?: Date | undefined }, now: Date): InvalidBody | undefined => {
  if (action.ts === undefined) return undefined
  if (isInFuture(action, now)) return tooFarAhead()
  return action.ts.getTime() >= earliestMillis
    ? undefined
    : new InvalidBody({ message: "ts: is before 1970-01-01T00:00:00Z" })
}

/**
 * Refuses an action dated more than {@link maxFutureSkewMillis} after now (`Clock`). Part of body
 * validation (step 2 of docs/api.md#order-of-checks), so every `from…`/`decode…` helper applies it.
 */
export const checkNotInFuture = <A extends { readonly ts?: Date | undefined }>(
  action: A
): Effect.Effect<A, InvalidBody> =>
  action.ts === undefined
    ? Effect.succeed(action)
    : Effect.clockWith((clock) =>
      isInFuture(action, new Date(clock.unsafeCurrentTimeMillis()))
        ? Effect.fail(tooFarAhead())
        : Effect.succeed(action)
    )

const actionOfRecord = (r: EventRecord, ts: Date | undefined = tsOf(r.ts)): Action => ({
  siteKey: r.siteKey,
  userHash: r.userHash,
  event: r.event ?? r.kind,
  eventType: r.eventType ?? "streak_interaction",
  ts,
  tz: r.tz,
  idempotencyKey: r.idempotencyKey,
  sessionId: r.sessionId,
  source: r.source,
  externalService: r.externalService,
  integrationId: r.integrationId,
  test: r.test === true,
  extra: extraOf({ meta: r.meta, details: r.details, performance: r.performance, error: r.error, consent: r.consent })
})

/** The action of an already decoded `EventRecord`. */
export const fromEventRecord = (r: EventRecord): Effect.Effect<Action, InvalidBody> =>
  checkNotInFuture(actionOfRecord(r))

/** The action of an already decoded `WebhookEvent` (always a streak action, never a test). */
export const fromWebhookEvent = (r: WebhookEvent): Effect.Effect<Action, InvalidBody> =>
  checkNotInFuture<Action>({
    siteKey: r.siteKey,
    userHash: r.userHash,
    event: r.event,
    eventType: "streak_interaction",
    ts: tsOf(r.ts),
    tz: r.tz,
    idempotencyKey: r.idempotencyKey,
    externalService: r.externalService,
    integrationId: r.integrationId,
    test: false,
    extra: extraOf({ meta: r.meta })
  })

/** The action of an already decoded `CountAction` (the program comes from the path). */
export const fromCountAction = (r: CountAction): Effect.Effect<Action, InvalidBody> =>
  checkNotInFuture<Action>({
    userHash: r.userHash,
    eventType: "streak_interaction",
    ts: tsOf(r.ts),
    tz: r.tz,
    idempotencyKey: r.idempotencyKey,
    externalService: r.externalService,
    integrationId: r.integrationId,
    test: r.test === true,
    extra: extraOf({ meta: r.meta })
  })

/**
 * One `InvalidBody` whose message names the first offending field ("userHash: is missing").
 * `field` names the value itself when it is not an object (a query parameter).
 */
export const invalidBody = (error: ParseResult.ParseError, field?: string): InvalidBody => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const path = [...(field === undefined ? [] : [field]), ...(issue?.path ?? [])]
  return new InvalidBody({
    message: path.length === 0 || issue === undefined
      ? "body: must be a JSON object with the documented fields"
      : `${path.join(".")}: ${issue.message}`
  })
}

const eitherOptions = { errors: "first", onExcessProperty: "ignore" } as const

// Compiled once per schema: decoding is on the hot path of every door.
const decoder = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, eitherOptions)
  return (u: unknown, field?: string): Effect.Effect<A, InvalidBody> =>
    !isCleanText(u) ? Effect.fail(uncleanText()) : Either.match(decode(u), {
      onLeft: (e) => Effect.fail(invalidBody(e, field)),
      onRight: Effect.succeed
    })
}

const decodeRecordEither = Schema.decodeUnknownEither(EventRecord, eitherOptions)

/**
 * `decodeEventRecord` with `now` given, as a value: for a caller that is not a fiber (the
 * server's fast path), which reads the clock itself.
 */
export const checkEventRecord = (u: unknown, now: Date): Either.Either<Action, InvalidBody> => {
  if (!isCleanText(u)) return Either.left(uncleanText())
  const decoded = decodeRecordEither(u)
  if (Either.isLeft(decoded)) return Either.left(invalidBody(decoded.left))
  const action = actionOfRecord(decoded.right)
  return isInFuture(action, now) ? Either.left(tooFarAhead()) : Either.right(action)
}

const decodeCountEither = Schema.decodeUnknownEither(CountAction, eitherOptions)

/**
 * `decodeCountAction` with `now` given, as a value: for a caller that checks many actions at once
 * (a history import), with the same checks and answers.
 */
export const checkCountAction = (u: unknown, now: Date): Either.Either<Action, InvalidBody> => {
  if (!isCleanText(u)) return Either.left(uncleanText())
  const decoded = decodeCountEither(u)
  if (Either.isLeft(decoded)) return Either.left(invalidBody(decoded.left))
  const r = decoded.right
  const action: Action = {
    userHash: r.userHash,
    eventType: "streak_interaction",
    ts: tsOf(r.ts),
    tz: r.tz,
    idempotencyKey: r.idempotencyKey,
    externalService: r.externalService,
    integrationId: r.integrationId,
    test: r.test === true,
    extra: extraOf({ meta: r.meta })
  }
  return isInFuture(action, now) ? Either.left(tooFarAhead()) : Either.right(action)
}

const decodeWebhook = decoder(WebhookEvent)
const decodeCount = decoder(CountAction)
const decodeHash = Schema.decodeUnknownEither(UserHash, { errors: "first" })

/** Parsed JSON of `/v1/e` or `/v1/server/e` → its action, or InvalidBody naming the field. */
export const decodeEventRecord = (u: unknown): Effect.Effect<Action, InvalidBody> =>
  Effect.clockWith((clock) => checkEventRecord(u, new Date(clock.unsafeCurrentTimeMillis())))

/** Parsed JSON of `/v1/webhook/:siteKey/e` → its action, or InvalidBody naming the field. */
export const decodeWebhookEvent = (u: unknown): Effect.Effect<Action, InvalidBody> =>
  Effect.flatMap(decodeWebhook(u), fromWebhookEvent)

/** Parsed JSON of the customer REST count-action → its action, or InvalidBody naming the field. */
export const decodeCountAction = (u: unknown): Effect.Effect<Action, InvalidBody> =>
  Effect.flatMap(decodeCount(u), fromCountAction)

/**
 * A member id from a query or admin body (≤ 256 characters, not an e-mail), else InvalidBody. An
 * `Either` (itself an effect): the read path checks it without running an operation.
 */
export const checkUserHash = (field: string, u: unknown): Either.Either<UserHash, InvalidBody> =>
  Ids.isUserHash(u) ? Either.right(u) : Either.mapLeft(decodeHash(u), (e) => invalidBody(e, field))

/** `checkUserHash` as an effect. */
export const decodeUserHash = (field: string, u: unknown): Effect.Effect<UserHash, InvalidBody> =>
  checkUserHash(field, u)
