/**
 * Tagged errors carrying the API's error codes (docs/api.md#errors). Core never
 * decides HTTP statuses; the http package maps each `code` to its status once.
 */
import { Schema } from "effect"

const fields = { message: Schema.optional(Schema.String) }

/** Body not JSON, a required field missing or malformed, a bad `ts`/`tz`/`eventType`. */
export class InvalidBody extends Schema.TaggedError<InvalidBody>()("InvalidBody", fields) {
  readonly code = "INVALID_BODY" as const
}
/** A part of the body over its size limit (docs/api.md#order-of-checks). */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {
  readonly code = "PAYLOAD_TOO_LARGE" as const
}
export class InvalidSiteKey extends Schema.TaggedError<InvalidSiteKey>()("InvalidSiteKey", fields) {
  readonly code = "INVALID_SITE_KEY" as const
}
export class SiteKeyMismatch extends Schema.TaggedError<SiteKeyMismatch>()("SiteKeyMismatch", fields) {
  readonly code = "SITE_KEY_MISMATCH" as const
}
/** No program of the project counts this event key. */
export class InvalidWidgetKind extends Schema.TaggedError<InvalidWidgetKind>()("InvalidWidgetKind", fields) {
  readonly code = "INVALID_WIDGET_KIND" as const
}
export class ServerTokenRequired extends Schema.TaggedError<ServerTokenRequired>()("ServerTokenRequired", fields) {
  readonly code = "SERVER_TOKEN_REQUIRED" as const
}
export class WebhookSecretRequired
  extends Schema.TaggedError<WebhookSecretRequired>()("WebhookSecretRequired", fields)
{
  readonly code = "WEBHOOK_SECRET_REQUIRED" as const
}
export class ForbiddenOrigin extends Schema.TaggedError<ForbiddenOrigin>()("ForbiddenOrigin", fields) {
  readonly code = "FORBIDDEN_ORIGIN" as const
}
/** The first request with this idempotency key is still being processed; retry after 1 s. */
export class IdempotencyKeyInProgress
  extends Schema.TaggedError<IdempotencyKeyInProgress>()("IdempotencyKeyInProgress", fields)
{
  readonly code = "IDEMPOTENCY_KEY_IN_PROGRESS" as const
}
export class AliasConflict extends Schema.TaggedError<AliasConflict>()("AliasConflict", fields) {
  readonly code = "ALIAS_CONFLICT" as const
}
export class InvalidAliasToken extends Schema.TaggedError<InvalidAliasToken>()("InvalidAliasToken", fields) {
  readonly code = "INVALID_ALIAS_TOKEN" as const
}
/** A repair refused (docs/streak-semantics.md#forgiveness): nothing changed, no allowance used. */
export class NotRepairable extends Schema.TaggedError<NotRepairable>()("NotRepairable", fields) {
  readonly code = "NOT_REPAIRABLE" as const
}
/** A pause overlapping another of the member's. */
export class PauseOverlaps extends Schema.TaggedError<PauseOverlaps>()("PauseOverlaps", fields) {
  readonly code = "PAUSE_OVERLAPS" as const
}
/** A pause removed on or after its start day. */
export class PauseStarted extends Schema.TaggedError<PauseStarted>()("PauseStarted", fields) {
  readonly code = "PAUSE_STARTED" as const
}
/** Missing, unknown or revoked credential (customer REST, admin). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {
  readonly code = "UNAUTHORIZED" as const
}
/** Unknown, or outside the credential's reach: existence is never revealed (docs/api.md#customer-rest-api-v1api). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  readonly code = "NOT_FOUND" as const
}

/** The credential is known but may not do this (a viewer's write, a session-only route, a missing CSRF token). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {
  readonly code = "FORBIDDEN" as const
}

/** The record would break a uniqueness rule (an e-mail address already taken). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {
  readonly code = "CONFLICT" as const
}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  retryAfterSeconds: Schema.Number
}) {
  readonly code = "RATE_LIMITED" as const
}

/** A storage adapter failed; never a client's mistake (the server answers 500/503 and logs it). */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** Every error a client can cause, each with its error code. */
export type ClientError =
  | InvalidBody
  | PayloadTooLarge
  | InvalidSiteKey
  | SiteKeyMismatch
  | InvalidWidgetKind
  | ServerTokenRequired
  | WebhookSecretRequired
  | ForbiddenOrigin
  | IdempotencyKeyInProgress
  | AliasConflict
  | NotRepairable
  | PauseOverlaps
  | PauseStarted
  | InvalidAliasToken
  | Unauthorized
  | NotFound
  | Forbidden
  | Conflict
  | RateLimited
