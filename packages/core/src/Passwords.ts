/**
 * Passwords: hashing and checking users' passwords with argon2id (`@node-rs/argon2`,
 * docs/decisions/0016-accounts-and-sessions.md). A password is never stored, logged or compared as
 * text; only its PHC string (`$argon2id$v=19$m=…`) is kept.
 */
import { hash, verify } from "@node-rs/argon2"
import { Context, Effect, Layer } from "effect"

/** Shortest password accepted (docs/accounts.md#users). */
export const minLength = 12
/** Longest password accepted: argon2 hashes any length, this only bounds the work of one request. */
export const maxLength = 256

// OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane (the library's defaults, written out so that
// an upgrade of the library cannot weaken them silently). The algorithm is the library's default, argon2id.
const options = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

export class Passwords extends Context.Tag("@streaks/core/Passwords")<Passwords, {
  /** The PHC string of `password` with a fresh salt. */
  readonly hash: (password: string) => Effect.Effect<string>
  /** Whether `password` is the one `phc` was made from; a malformed `phc` matches nothing. */
  readonly verify: (phc: string, password: string) => Effect.Effect<boolean>
}>() {}

export const make = Passwords.of({
  // Runs on the library's thread pool: the event loop stays free while memory-hard work goes on.
  hash: (password) => Effect.promise(() => hash(password, options)),
  verify: (phc, password) => Effect.tryPromise(() => verify(phc, password)).pipe(Effect.orElseSucceed(() => false))
})

export const layer: Layer.Layer<Passwords> = Layer.succeed(Passwords, make)
