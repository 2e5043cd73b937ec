/**
 * Tracked files describe the product as it is (`scripts/check-wording.mjs`, also run by
 * `pnpm lint`): no work sessions, machine of the day, numbered rounds of work or experiments that
 * were not kept, nor citations of documents outside the repository. The patterns are checked both
 * ways: a work log's phrases and such citations match, the product's own words (sessions of HTTP
 * and Postgres, the bench's rounds, a cache miss that is dropped), section links of `docs/`, a
 * public standard's "§" and license texts do not.
 */
import { assert, describe, it } from "@effect/vitest"
import { check, findingsIn } from "../check-wording.mjs"

/** A work log's phrase, kept apart in this file so that the repository itself never says it. */
const log = (...words: ReadonlyArray<string>) => words.join(" ")

const matched = (text: string, file = "sample.md") => findingsIn([[file, text]]).map((f) => f.text)

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

  it("a citation of a document outside the repository is found, in every form", () => {
    for (
      const text of [
        "How the program counts (CONTRACT §16); absent: the default policy.",
        "every field of spec §2.6, exactly",
        "(spec §5 rule 1)",
        "(CONTRACT §2 \"Fault isolation\")",
        "the checks of CONTRACT §2 step 4",
        "The spec leaves these open (CONTRACT.md records the decisions).",
        "the MCP worker accepts beside them (§17).",
        "without one the program counts as §6 says",
        "a program without a policy sends §8's body exactly"
      ]
    ) {
      assert.lengthOf(matched(text), 1, text)
    }
    // A list is one citation per section: each is a document the reader cannot open.
    assert.deepStrictEqual(matched("(CONTRACT §8, §16)"), ["CONTRACT §8", "§16"])
  })

  it("section links of docs/, a public standard's § and license texts pass", () => {
    for (
      const text of [
        "How the program counts (docs/streak-semantics.md#streak-policies).",
        "see [Order of checks](api.md#order-of-checks), step 4",
        "Where the protected-resource document is served (RFC 9728 §3)",
        "a token in the query string (`access_token`, RFC 6750 §2.3)",
        "RFC 9110 §15.5.1 and §15.5.2",
        "LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,",
        "the contract of a port: every MUST rule"
      ]
    ) {
      assert.deepStrictEqual(matched(text), [], text)
    }
    assert.deepStrictEqual(matched("§ 1. Definitions, as in CONTRACT §4", "LICENSE"), [])
    assert.deepStrictEqual(matched("§ 1. Definitions", "packages/http/LICENSE"), [])
  })
})
