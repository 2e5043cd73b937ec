/**
 * Standard Webhooks signing (docs/webhooks.md#verifying-a-delivery): `webhook-id`,
 * `webhook-timestamp` (unix seconds) and `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` with a `whsec_<base64>` secret. `verify` is the helper receivers use; it
 * needs nothing but node:crypto.
 */
import { Either } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

const PREFIX = "whsec_"

/** A fresh subscription secret: `whsec_` + base64 of 24 random bytes. */
export const generateSecret = (): string => `${PREFIX}${randomBytes(24).toString("base64")}`

const keyOf = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64")

/** `v1,<signature>` of one message at one timestamp. */
export const sign = (secret: string, id: string, timestamp: Date, body: string): string => {
  const seconds = Math.floor(timestamp.getTime() / 1000)
  const mac = createHmac("sha256", keyOf(secret)).update(`${id}.${seconds}.${body}`).digest("base64")
  return `v1,${mac}`
}

export type SignatureHeaders = {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

/** The three headers of one delivery attempt: the id stays, the timestamp is the attempt's. */
export const headers = (secret: string, id: string, body: string, at: Date): SignatureHeaders => ({
  "webhook-id": id,
  "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
  "webhook-signature": sign(secret, id, at, body)
})

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError"
}

type HeaderBag = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const header = (bag: HeaderBag, name: string): string | undefined => {
  for (const [k, v] of Object.entries(bag)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : (v as string | undefined)
  }
  return undefined
}

/**
 * Checks a delivery as received: the raw body string exactly as it arrived (re-serialised JSON
 * would not match), the headers in any letter case. Any of several space-separated `v1,`
 * signatures may match (secret rotation). Returns the parsed body, or why it was refused.
 */
export const verify = (
  secret: string,
  headersIn: HeaderBag,
  body: string,
  options: { readonly now?: Date; readonly toleranceSeconds?: number } = {}
): Either.Either<unknown, WebhookVerificationError> => {
  const id = header(headersIn, "webhook-id")
  const timestamp = header(headersIn, "webhook-timestamp")
  const signatures = header(headersIn, "webhook-signature")
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    return Either.left(new WebhookVerificationError("Missing required headers"))
  }
  const seconds = Number(timestamp)
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds)) {
    return Either.left(new WebhookVerificationError("Invalid Signature Headers"))
  }
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000)
  const tolerance = options.toleranceSeconds ?? 300
  if (now - seconds > tolerance) return Either.left(new WebhookVerificationError("Message timestamp too old"))
  if (seconds - now > tolerance) return Either.left(new WebhookVerificationError("Message timestamp too new"))
  const expected = Buffer.from(sign(secret, id, new Date(seconds * 1000), body).slice(3), "base64")
  const matched = signatures.split(" ").some((candidate) => {
    const [version, value] = candidate.split(",", 2)
    if (version !== "v1" || value === undefined) return false
    const given = Buffer.from(value, "base64")
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
  if (!matched) return Either.left(new WebhookVerificationError("No matching signature found"))
  try {
    return Either.right(body === "" ? undefined : JSON.parse(body))
  } catch {
    return Either.left(new WebhookVerificationError("Body is not JSON"))
  }
}
