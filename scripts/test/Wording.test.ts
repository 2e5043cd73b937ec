/**
 * Tracked files describe the product as it is (`scripts/check-wording.mjs`, also run by
 * `pnpm lint`): no work sessions, machine of the day, numbered rounds of work or experiments that
 * were not kept. The patterns are checked both ways: a work log's phrases match, the product's
 * own words (sessions of HTTP and Postgres, the bench's rounds, a cache miss that is dropped) do not.
 */
import { assert, describe, it } from "@effect/vitest"
import { check, findingsIn } from "../check-wording.mjs"

/** A work log's phrase, kept apart in this file so that the repository itself never says it. */
const log = (...words: ReadonlyArray<string>) => words.join(" ")

const matched = (text: string) => findingsIn([["sample.md", text]]).map((f) => f.text)

describe("the wording check", () => {
  it("tracked files carry no phrase of a work log", () => {
    const { problems } = check()
    assert.deepStrictEqual(problems, [])
  })

  it("a work log's phrases are found, across line breaks too", () => {
    for (
      const text of [
        log("measured in the twelfth", "session"),
        log("the thirty-second", "session's", "standing"),
        log("as in the 3rd", "session"),
        log("on this", "session's", "host"),
        "figures from earlier sessions",
        log("on today's", "host"),
        "the machine of the day",
        "numbered rounds of tuning",
        "see the tried-and-not-kept table",
        log("a probe (not", "kept) stamped each action"),
        "27 experiments that were not kept",
        "in the eighteenth\nsession's runs"
      ]
    ) {
      assert.lengthOf(matched(text), 1, text)
    }
  })

  it("the product's own words pass: sessions of HTTP and Postgres, the bench's rounds, a miss not kept", () => {
    for (
      const text of [
        "`sessionId`, `session_id`: the client's session",
        "sets plan_cache_mode for its session",
        "whatever the session and process time zones",
        "no admin session stays open during the tests",
        "the session's DateStyle",
        "a session cookie",
        "BENCH_ROUNDS=3 measures each round three times; round 2 of each",
        "a miss is not kept: a project created elsewhere is found at once",
        "the member's streak of the day"
      ]
    ) {
      assert.deepStrictEqual(matched(text), [], text)
    }
  })
})
