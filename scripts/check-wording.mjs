#!/usr/bin/env node
/**
 * Part of `pnpm lint` (and a test of the `repo` project): tracked files describe the product as it
 * is. Fails on the wording of a work log: work sessions named by their number or as the present
 * one, the machine of the day, numbered rounds of work, experiments left out of the product. Words
 * the product itself uses (an HTTP or Postgres session, `sessionId`, the bench's rounds, "a miss is
 * not kept") do not match: each pattern names the work-log sense only. Fails too on citations of
 * documents a reader of the repository does not have ("CONTRACT §n", "spec §n", a bare "§n"): the
 * rule belongs in `docs/`, cited by its section link. A "§" of a public standard ("RFC 9728 §3")
 * and license texts pass.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** The files that hold the patterns themselves. */
const own = ["scripts/check-wording.mjs", "scripts/test/Wording.test.ts"]

const ordinal = "(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|" +
  "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth|fortieth|fiftieth|" +
  "(?:twenty|thirty|forty|fifty)-(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|\\d+(?:st|nd|rd|th))"

/** A phrase as a pattern: a space matches any run of whitespace, line breaks included. */
const phrase = (source) => new RegExp(source.replaceAll(" ", "\\s+"), "gi")

/** A "§" that cites a public standard, which anyone can open: "RFC 6750 §2.3", "ISO 8601 §4". */
const publicStandard = (text, index) =>
  /\b(?:RFC|ISO(?:\/IEC)?|ECMA-?)\s?\d{2,5}(?:-\d+)?\s*(?:§\s?[\d.]+\s*(?:,|and)\s*)*$/.test(
    text.slice(Math.max(0, index - 40), index)
  )

/** Citations of documents outside the repository: case matters ("ACTION OF CONTRACT" in a license is no citation). */
export const citations = [
  {
    re: /\bCONTRACT(?:\.md\b|\s*§\s*\d[\d.]*)|\bspec(?:ification)?(?:'s)?\s*§\s*\d[\d.]*|§\s*\d[\d.]*/g,
    why: "a citation of a document outside the repository: write the rule into docs/ and link its section",
    unless: publicStandard
  }
]

/** License texts are quoted as they are, whatever they say. */
const license = (file) => /(?:^|\/)(?:LICEN[CS]E|COPYING|NOTICE)(?:\.\w+)?$/i.test(file)

/** What a work log says and product docs do not, each with the reason it is refused. */
export const patterns = [
  { re: phrase(`\\b${ordinal}[- ]sessions?(?:'s)?\\b`), why: "a numbered work session" },
  {
    re: phrase(
      "\\b(?:this|that|each|every|earlier|previous|later|last|next|one|the|whole) sessions?'s? " +
        "(?:host|figures|runs?|code|standing|final|first|second|reading|changes?|measurements?|machine|A/B)\\b"
    ),
    why: "a work session's results"
  },
  { re: phrase("\\b(?:earlier|previous|past|later) sessions\\b|\\bfrom session to session\\b"), why: "work sessions" },
  { re: phrase("\\b(?:work|working|tuning) sessions?\\b|\\bsessions? of work\\b"), why: "work sessions" },
  {
    re: phrase("\\btoday'?s (?:host|machine)\\b|\\b(?:host|machine) of the day\\b|\\bthe day'?s (?:host|machine)\\b"),
    why: "the machine of the day"
  },
  {
    re: phrase("\\bnumbered rounds?\\b|\\b(?:work|tuning) rounds?\\b|\\bround \\d+ of (?:work|tuning)\\b"),
    why: "numbered rounds of work"
  },
  { re: phrase("\\btried[- ]and[- ]not[- ]kept\\b|\\((?:not|none) kept\\)"), why: "experiments not kept" },
  {
    re: phrase(
      "\\b(?:experiments?|probes?|prototypes?|tries|attempts?)\\b(?: \\w+){0,3} (?:that were |were |was )?not kept\\b"
    ),
    why: "experiments not kept"
  }
]

/**
 * Findings in files being rewritten by their owner, each as the exact text matched: they are
 * listed, not failed. An entry that no longer matches is listed as stale: delete it, until this is
 * empty.
 */
export const awaitingOwner = {}

/** Tracked files (every file under the root when git is not there), without binaries and the lockfile. */
const trackedFiles = () => {
  let files
  try {
    files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).split("\0").filter(Boolean)
  } catch {
    const skipped = ["node_modules", "dist", "build", ".git", ".tsbuildinfo", ".streaks"]
    const walk = (dir) =>
      readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
        if (skipped.includes(entry.name)) return []
        const path = dir === "" ? entry.name : `${dir}/${entry.name}`
        return entry.isDirectory() ? walk(path) : [path]
      })
    files = walk("")
  }
  return files.filter((file) =>
    !own.includes(file) && file !== "pnpm-lock.yaml" &&
    !/\.(?:png|jpe?g|gif|ico|webp|woff2?|tgz|gz|zip|wasm)$/i.test(file)
  )
}

/** Every phrase that matches in `texts` (path → content): its file, line, text and reason. */
export const findingsIn = (texts) => {
  const found = []
  for (const [file, text] of texts) {
    for (const { re, why, unless } of [...patterns, ...(license(file) ? [] : citations)]) {
      for (const match of text.matchAll(re)) {
        if (unless?.(text, match.index)) continue
        const line = text.slice(0, match.index).split("\n").length
        found.push({ file, line, text: match[0].replace(/\s+/g, " "), why })
      }
    }
  }
  return found
}

/** The repository's tracked text files and their contents. */
const trackedTexts = () =>
  trackedFiles().flatMap((file) => {
    try {
      if (!statSync(join(root, file)).isFile()) return []
      const text = readFileSync(join(root, file), "utf8")
      return text.includes("\0") ? [] : [[file, text]]
    } catch {
      return [] // listed by git but deleted in the work tree
    }
  })

/**
 * The check: `problems` are the findings not awaiting their owner; `stale` lists the entries of
 * `awaitingOwner` that no longer match anything.
 */
export const check = (texts = trackedTexts()) => {
  const found = findingsIn(texts)
  const awaited = (f) => (awaitingOwner[f.file] ?? []).includes(f.text)
  const problems = found.filter((f) => !awaited(f)).map((f) => `${f.file}:${f.line}: "${f.text}" (${f.why})`)
  const stale = Object.entries(awaitingOwner).flatMap(([file, phrases]) =>
    phrases.filter((text) => !found.some((f) => f.file === file && f.text === text)).map((text) => `${file}: "${text}"`)
  )
  return { problems, awaiting: found.filter(awaited), stale }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { awaiting, problems, stale } = check()
  for (const f of awaiting) console.log(`awaiting its owner: ${f.file}:${f.line}: "${f.text}"`)
  for (const entry of stale) console.log(`reworded, delete from awaitingOwner in scripts/check-wording.mjs: ${entry}`)
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(
      `\n${problems.length} phrase(s) refused: say what the product does, not how the work went, and cite ` +
        "only what the repository holds."
    )
    process.exitCode = 1
  }
}
