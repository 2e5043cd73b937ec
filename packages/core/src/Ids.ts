/**
 * Opaque identifiers: a type prefix (`prj_`, `prg_`, ...) followed by a time-ordered random part,
 * so ids sort by creation and never reveal anything about the tenant.
 */
import { Clock, Effect, Schema } from "effect"
import { Buffer } from "node:buffer"
import { randomBytes } from "node:crypto"

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
const DIGITS = Array.from(CROCKFORD, (c) => c.charCodeAt(0))

// Every action makes an id: its characters are written as bytes into one reused buffer and read
// as a string at once (appended one by one, each id would leave a trail of short-lived strings).
const chars = Buffer.alloc(64)

/** Base32 of up to 40 bytes. */
const encode = (bytes: Uint8Array): string => {
  let n = 0
  let buffer = 0
  let bits = 0
  for (let i = 0; i < bytes.length; i++) {
    // At most 12 bits are pending (4 left over and 8 new), so that is all the buffer keeps.
    buffer = ((buffer << 8) | bytes[i]!) & 0xfff
    bits += 8
    while (bits >= 5) {
      chars[n++] = DIGITS[(buffer >>> (bits - 5)) & 31]!
      bits -= 5
    }
  }
  if (bits > 0) chars[n++] = DIGITS[(buffer << (5 - bits)) & 31]!
  return chars.toString("latin1", 0, n)
}

// Random bytes are drawn 4 KiB at a time: one `randomBytes` call per id cost more than the rest
// of making it (every action makes one). The pool is consumed once, never reused.
const POOL = 4096
let pool = randomBytes(POOL)
let used = 0

/** Reused by `randomPart`, which encodes it before it returns. */
const body = new Uint8Array(16)

/** A ULID-like body: 48 bits of milliseconds then 80 random bits, base32 (lowercase Crockford). */
export const randomPart = (millis: number): string => {
  let t = millis
  for (let i = 5; i >= 0; i--) {
    body[i] = t % 256
    t = Math.floor(t / 256)
  }
  if (used + 10 > POOL) {
    pool = randomBytes(POOL)
    used = 0
  }
  for (let i = 6; i < 16; i++) body[i] = pool[used++]!
  return encode(body)
}

/** Random characters for secrets: 32 bytes of entropy, base32. */
export const secretPart = (): string => {
  const secret = encode(randomBytes(32))
  // The shared buffer lives as long as the process: no copy of a secret stays in it.
  chars.fill(0)
  return secret
}

const prefixes = new Map<string, string>()

const id = <const B extends string>(brand: B, prefix: string) => {
  prefixes.set(brand, prefix)
  return Schema.String.pipe(Schema.startsWith(prefix), Schema.maxLength(64), Schema.brand(brand))
}

export const WorkspaceId = id("WorkspaceId", "ws_")
export type WorkspaceId = typeof WorkspaceId.Type
export const ProjectId = id("ProjectId", "prj_")
export type ProjectId = typeof ProjectId.Type
export const ProgramId = id("ProgramId", "prg_")
export type ProgramId = typeof ProgramId.Type
export const MilestoneId = id("MilestoneId", "ms_")
export type MilestoneId = typeof MilestoneId.Type
export const SubscriptionId = id("SubscriptionId", "sub_")
export type SubscriptionId = typeof SubscriptionId.Type
export const ApiKeyId = id("ApiKeyId", "key_")
export type ApiKeyId = typeof ApiKeyId.Type
export const OAuthGrantId = id("OAuthGrantId", "oag_")
export type OAuthGrantId = typeof OAuthGrantId.Type
/** An operator-issued MCP token (docs/mcp.md), stored as a grant beside the OAuth apps' ones. */
export const McpTokenId = id("McpTokenId", "mcp_")
export type McpTokenId = typeof McpTokenId.Type
/** A client of the OAuth authorization server (docs/oauth.md): registered by the operator or by itself. */
export const OAuthClientId = id("OAuthClientId", "oac_")
export type OAuthClientId = typeof OAuthClientId.Type
/** An authorization code's record (the code itself is a secret, stored as a hash). */
export const AuthorizationCodeId = id("AuthorizationCodeId", "ocd_")
export type AuthorizationCodeId = typeof AuthorizationCodeId.Type
/** An access or refresh token's record of a consented grant (the token is stored as a hash). */
export const OAuthTokenId = id("OAuthTokenId", "otk_")
export type OAuthTokenId = typeof OAuthTokenId.Type
export const ExperimentId = id("ExperimentId", "exp_")
export type ExperimentId = typeof ExperimentId.Type
export const EventId = id("EventId", "evt_")
export type EventId = typeof EventId.Type
export const MessageId = id("MessageId", "msg_")
export type MessageId = typeof MessageId.Type
export const SiteKey = id("SiteKey", "site_")
/** A member's pause (docs/streak-semantics.md#forgiveness). */
export const PauseId = id("PauseId", "pau_")
/** A program's outage window (docs/streak-semantics.md#forgiveness). */
export const OutageId = id("OutageId", "out_")
export type SiteKey = typeof SiteKey.Type
/** A person who signs in (docs/accounts.md). */
export const UserId = id("UserId", "usr_")
export type UserId = typeof UserId.Type
export const SessionId = id("SessionId", "ses_")
export type SessionId = typeof SessionId.Type
export const InviteId = id("InviteId", "inv_")
export type InviteId = typeof InviteId.Type
export const AuditEntryId = id("AuditEntryId", "aud_")
export type AuditEntryId = typeof AuditEntryId.Type
/** A history import (docs/operations.md#bringing-your-history). */
export const ImportId = id("ImportId", "imp_")
export type ImportId = typeof ImportId.Type

const USER_HASH_MAX = 256
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/

/** Text that can be stored and compared faithfully: no U+0000, no unpaired UTF-16 surrogate. */
export const isWellFormedText = (s: string): boolean =>
  !s.includes("\u0000") && (s as unknown as { isWellFormed(): boolean }).isWellFormed()

/** A member's stable opaque id within a project (a hash chosen by the customer, never an e-mail). */
export const UserHash = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(USER_HASH_MAX),
  Schema.filter((s) => !EMAIL.test(s) || "userHash must not be a raw e-mail address"),
  Schema.filter((s) => isWellFormedText(s) || "userHash must not contain U+0000 or an unpaired surrogate"),
  Schema.brand("UserHash")
)
export type UserHash = typeof UserHash.Type

/**
 * `UserHash`'s rules as a plain test, for the read path of every widget load (the schema's decode
 * allocated a result per refinement). The schema stays the source of the error messages.
 */
export const isUserHash = (u: unknown): u is UserHash =>
  typeof u === "string" && u.length >= 1 && u.length <= USER_HASH_MAX && !EMAIL.test(u) && isWellFormedText(u)

/** Every id kind with its schema (the prefix lives in one place, the schema's `startsWith`). */
export interface Kinds {
  readonly WorkspaceId: typeof WorkspaceId
  readonly ProjectId: typeof ProjectId
  readonly ProgramId: typeof ProgramId
  readonly MilestoneId: typeof MilestoneId
  readonly SubscriptionId: typeof SubscriptionId
  readonly ApiKeyId: typeof ApiKeyId
  readonly OAuthGrantId: typeof OAuthGrantId
  readonly McpTokenId: typeof McpTokenId
  readonly OAuthClientId: typeof OAuthClientId
  readonly AuthorizationCodeId: typeof AuthorizationCodeId
  readonly OAuthTokenId: typeof OAuthTokenId
  readonly ExperimentId: typeof ExperimentId
  readonly EventId: typeof EventId
  readonly MessageId: typeof MessageId
  readonly SiteKey: typeof SiteKey
  readonly UserId: typeof UserId
  readonly SessionId: typeof SessionId
  readonly InviteId: typeof InviteId
  readonly AuditEntryId: typeof AuditEntryId
  readonly PauseId: typeof PauseId
  readonly OutageId: typeof OutageId
  readonly ImportId: typeof ImportId
}

type Kind = keyof Kinds
type Branded<K extends Kind> = Kinds[K]["Type"]

const prefixOf = (kind: Kind): string => {
  const prefix = prefixes.get(kind)
  if (prefix !== undefined) return prefix
  throw new Error(`no prefix for ${kind}`)
}

/** A fresh id of the given kind; time comes from `Clock` so ids follow `TestClock` in tests. */
export const make = <K extends Kind>(kind: K): Effect.Effect<Branded<K>> =>
  Effect.map(Clock.currentTimeMillis, (ms) => makeAt(kind, ms))

/** A fresh id of the given kind made at `millis` (from `Clock`), for many ids at one instant. */
export const makeAt = <K extends Kind>(kind: K, millis: number): Branded<K> =>
  `${prefixOf(kind)}${randomPart(millis)}` as Branded<K>

/** Makes an id from a string known to be valid (e.g. read back from storage). */
export const unsafe = <K extends Kind>(_kind: K, value: string): Branded<K> => value as Branded<K>
