/**
 * The deployment key that seals signing secrets (docs/decisions/0001): `STREAKS_SECRET_KEY`, or
 * for a local run a random key kept beside the embedded database (created once, mode 0600).
 */
import { Effect, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export const resolve = (
  configured: Option.Option<Redacted.Redacted<string>>,
  dataDir: string
): Effect.Effect<Redacted.Redacted<string>> =>
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
