/**
 * Seals secrets that must be used again later (HMAC keys: project signing secrets, subscription
 * signing secrets), so that the database never holds them in plaintext. AES-256-GCM.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"

export class SecretBox extends Context.Tag("@streaks/core/SecretBox")<SecretBox, {
  /** `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
  readonly seal: (plaintext: string) => string
  /** The plaintext, or undefined when the value was not sealed with this key. */
  readonly open: (sealed: string) => string | undefined
}>() {}

const b64 = (b: Buffer) => b.toString("base64url")

/** A box keyed by any string (hashed to 256 bits), e.g. `STREAKS_SECRET_KEY`. */
export const make = (key: Redacted.Redacted<string>): SecretBox["Type"] => {
  const k = createHash("sha256").update(Redacted.value(key)).digest()
  return {
    seal: (plaintext) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", k, iv)
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return `v1.${b64(iv)}.${b64(cipher.getAuthTag())}.${b64(data)}`
    },
    open: (sealed) => {
      const [v, iv, tag, data] = sealed.split(".")
      if (v !== "v1" || iv === undefined || tag === undefined || data === undefined) return undefined
      try {
        const decipher = createDecipheriv("aes-256-gcm", k, Buffer.from(iv, "base64url"))
        decipher.setAuthTag(Buffer.from(tag, "base64url"))
        return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8")
      } catch {
        return undefined
      }
    }
  }
}

export const layer = (key: Redacted.Redacted<string>): Layer.Layer<SecretBox> => Layer.succeed(SecretBox, make(key))

/** A box with a random key: for tests and in-memory use, where nothing outlives the process. */
export const layerEphemeral: Layer.Layer<SecretBox> = Layer.effect(
  SecretBox,
  Effect.sync(() => make(Redacted.make(randomBytes(32).toString("hex"))))
)
