/**
 * The deployment key that seals signing secrets (docs/decisions/0001): `STREAKS_SECRET_KEY`, or
 * for a local run on the embedded database a random key kept beside it (created once, mode 0600).
 */
import { Effect, Option, Redacted, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** `DATABASE_URL` without `STREAKS_SECRET_KEY`: the server refuses to start. */
export class MissingSecretKey extends Schema.TaggedError<MissingSecretKey>()("MissingSecretKey", {
  message: Schema.String
}) {}

const missing = new MissingSecretKey({
  message: "STREAKS_SECRET_KEY is not set, and DATABASE_URL is. Every replica on one database must seal " +
    "signing secrets with the same key, or the secrets one replica seals cannot be opened by another " +
    "(deliveries and identity tokens then fail for good). Set STREAKS_SECRET_KEY to the same secret " +
    "value on every replica (docs/operations.md, \"The secret key\")."
})

/**
 * Fails with `MissingSecretKey` when a database is configured (`DATABASE_URL`) and no key: a key
 * generated into one machine's data directory would differ between replicas.
 */
export const check = (config: {
  readonly secretKey: Option.Option<Redacted.Redacted<string>>
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
}): Effect.Effect<void, MissingSecretKey> =>
  Option.isSome(config.databaseUrl) && Option.isNone(config.secretKey) ? Effect.fail(missing) : Effect.void

/**
 * `configured`, else (only without `databaseUrl`: the embedded database of one machine) the key
 * kept in `dataDir`, generated on first use.
 */
export const resolve = (
  configured: Option.Option<Redacted.Redacted<string>>,
  dataDir: string,
  databaseUrl: Option.Option<Redacted.Redacted<string>> = Option.none()
): Effect.Effect<Redacted.Redacted<string>, MissingSecretKey> =>
  Effect.zipRight(
    check({ secretKey: configured, databaseUrl }),
    Option.match(configured, {
      onSome: Effect.succeed,
      onNone: () =>
        Effect.sync(() => {
          const file = join(dataDir, "secret.key")
          if (!existsSync(file)) {
            mkdirSync(dataDir, { recursive: true })
            writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" })
          }
          return Redacted.make(readFileSync(file, "utf8").trim())
        })
    })
  )
