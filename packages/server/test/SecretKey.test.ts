/**
 * The secret key on several replicas: with `DATABASE_URL` and no `STREAKS_SECRET_KEY` the server
 * refuses to start (a key generated per machine would differ between replicas); on the embedded
 * database of one machine a generated key is fine.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as SecretKey from "../src/SecretKey.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const url = Option.some(Redacted.make("postgres://postgres@127.0.0.1:1/none"))

describe("SecretKey", () => {
  it.effect("with DATABASE_URL and no STREAKS_SECRET_KEY, resolving the key fails with MissingSecretKey and writes no key file", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "streaks-key-"))
      const error = yield* Effect.flip(SecretKey.resolve(Option.none(), dir, url))
      assert.strictEqual(error._tag, "MissingSecretKey")
      assert.match(error.message, /STREAKS_SECRET_KEY is not set/)
      assert.isFalse(existsSync(join(dir, "secret.key")))
      rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("a configured key is used as is; without DATABASE_URL a key is generated once into the data directory", () =>
    Effect.gen(function*() {
      const configured = yield* SecretKey.resolve(Option.some(Redacted.make("k")), "/nonexistent", url)
      assert.strictEqual(Redacted.value(configured), "k")
      const dir = mkdtempSync(join(tmpdir(), "streaks-key-"))
      const first = yield* SecretKey.resolve(Option.none(), dir)
      const again = yield* SecretKey.resolve(Option.none(), dir)
      assert.strictEqual(Redacted.value(first), Redacted.value(again))
      assert.isTrue(existsSync(join(dir, "secret.key")))
      rmSync(dir, { recursive: true, force: true })
    }))

  it(
    "`streaks serve` with DATABASE_URL and no STREAKS_SECRET_KEY exits non-zero with the reason, before connecting",
    () => {
      const { STREAKS_SECRET_KEY: _, ...env } = process.env
      const started = Date.now()
      const run = spawnSync(process.execPath, ["--import", "tsx", "src/bin.ts", "serve"], {
        cwd: root,
        // Nothing listens on port 1: a connection attempt would fail with another message.
        env: { ...env, DATABASE_URL: "postgres://postgres@127.0.0.1:1/none", PORT: "18787" },
        encoding: "utf8",
        timeout: 60_000
      })
      const output = run.stdout + run.stderr
      assert.notStrictEqual(run.status, 0)
      assert.notStrictEqual(run.status, null)
      assert.match(output, /STREAKS_SECRET_KEY is not set, and DATABASE_URL is/)
      assert.notMatch(output, /ECONNREFUSED|connect/i)
      assert.isBelow(Date.now() - started, 60_000)
    },
    90_000
  )
})
