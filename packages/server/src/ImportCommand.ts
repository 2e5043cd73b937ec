/**
 * `streaks import --program prg_… FILE`: a file of past actions (NDJSON, or CSV with a header)
 * loaded straight into the database the server uses (`DATABASE_URL`, else the embedded default
 * database), with a progress bar on a terminal and plain progress lines otherwise. An interrupted
 * import of the same file resumes from its last committed line (docs/operations.md#bringing-your-history).
 * Each start is in the audit log, by the operator on the command line, as an HTTP import's is.
 */
import { Args, Command, Options } from "@effect/cli"
import { Audit, Imports, OutboxSignal } from "@streaks/core"
import { PgStorage } from "@streaks/storage-pg"
import * as AuditTrail from "@streaks/http/AuditTrail"
import { lineLimits } from "@streaks/http/CustomerHandlers"
import cliProgress from "cli-progress"
import { Console, Effect, Layer, Option, Stream } from "effect"
import { createHash } from "node:crypto"
import { createReadStream } from "node:fs"
import * as CliOperator from "./CliOperator.js"
import * as Main from "./Main.js"
import * as ServerConfig from "./ServerConfig.js"

/** A file's digest (names it for resuming) and its number of lines, in one pass. */
export const survey = (path: string): Effect.Effect<{ readonly digest: string; readonly lines: number }, Error> =>
  Effect.tryPromise({
    try: async () => {
      const hash = createHash("sha256")
      let lines = 0
      let last = 10
      for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
        hash.update(chunk)
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
        if (chunk.length > 0) last = chunk[chunk.length - 1]!
      }
      // A last line without its newline is a line too.
      return { digest: `sha256:${hash.digest("hex")}`, lines: last === 10 ? lines : lines + 1 }
    },
    catch: (cause) => new Error(`cannot read ${path}: ${String(cause)}`)
  })

/** The file's text, in chunks. */
const fileText = (path: string): Stream.Stream<string, Error> =>
  Stream.fromAsyncIterable(
    createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 }) as AsyncIterable<string>,
    (cause) => new Error(`cannot read ${path}: ${String(cause)}`)
  )

/** Progress as one plain line: lines read of the total, rate and time left. */
export const progressLine = (line: number, total: number, rate: number): string => {
  const left = rate > 0 ? Math.max(0, Math.round((total - line) / rate)) : undefined
  return `import: ${line}/${total} lines, ${Math.round(rate)} lines/s, ETA ${left === undefined ? "?" : `${left}s`}`
}

/** Reports progress on stderr: a bar on a terminal, a line per report (at most one a second) otherwise. */
const makeReporter = (total: number, from: number, tty: boolean) => {
  const started = Date.now()
  const rateAt = (line: number) => {
    const seconds = (Date.now() - started) / 1000
    return seconds > 0 ? (line - from) / seconds : 0
  }
  if (tty) {
    const bar = new cliProgress.SingleBar({
      stream: process.stderr,
      format: "import [{bar}] {percentage}% | {value}/{total} lines | {rate} lines/s | ETA {eta_formatted}",
      hideCursor: true,
      etaBuffer: 50
    }, cliProgress.Presets.shades_classic)
    bar.start(total, from, { rate: 0 })
    return {
      update: (line: number) => bar.update(line, { rate: Math.round(rateAt(line)) }),
      stop: () => bar.stop()
    }
  }
  let shown = 0
  return {
    update: (line: number) => {
      if (Date.now() - shown < 1000 && line < total) return
      shown = Date.now()
      process.stderr.write(`${progressLine(line, total, rateAt(line))}\n`)
    },
    stop: () => {}
  }
}

const program = Options.text("program").pipe(Options.withDescription("The program to import into (prg_…)"))
const format = Options.choice("format", ["ndjson", "csv"]).pipe(
  Options.withDescription("The file's format (default: csv for a .csv file, else ndjson)"),
  Options.optional
)
const batchLines = Options.integer("batch-lines").pipe(
  Options.withDescription(`Lines per committed batch (default ${Imports.defaultBatchLines})`),
  Options.optional
)
const file = Args.path({ name: "FILE", exists: "yes" })

/** Imports `path` into `programId` on the configured database; the final job as JSON on stdout. */
export const run = (options: {
  readonly programId: string
  readonly path: string
  readonly format: Imports.Format
  readonly batchLines?: number | undefined
}) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig.config
    const { digest, lines } = yield* survey(options.path)
    const work = Effect.gen(function*() {
      const imports = yield* Imports.Imports
      const workspaceId = yield* AuditTrail.workspaceOfProgram(options.programId)
      const job = yield* Audit.audited(CliOperator.by, (started) => ({
        action: "import.start",
        target: started.id,
        workspaceId,
        details: { programId: started.programId, format: options.format }
      }), imports.start(options.programId, digest))
      if (job.committedLine > 0) {
        yield* Console.error(`import: resuming ${job.id} after line ${job.committedLine}`)
      }
      const reporter = makeReporter(lines, job.committedLine, process.stderr.isTTY === true)
      const loaded = yield* imports.load(job, Imports.lines(fileText(options.path)), {
        format: options.format,
        source: digest,
        batchLines: options.batchLines,
        checkLine: lineLimits,
        onProgress: (j) => Effect.sync(() => reporter.update(j.committedLine))
      }).pipe(Effect.ensuring(Effect.sync(() => reporter.stop())))
      yield* Console.error("import: recomputing streaks")
      const done = yield* imports.finish(loaded)
      yield* Console.log(JSON.stringify(Imports.view(done)))
    })
    const layer = Layer.mergeAll(Imports.layer, Audit.layer, OutboxSignal.layerNoop).pipe(
      Layer.provideMerge(PgStorage.layer({ prefix: config.tablePrefix })),
      Layer.provide(Main.layerDatabase(config))
    )
    yield* Effect.provide(work, layer)
  }).pipe(
    // The reason on stderr, where the progress goes; stdout carries only the final job.
    Effect.tapError((e) =>
      Console.error(`import failed: ${e instanceof Error || "message" in e ? e.message : String(e)}`)
    )
  )

export const command = Command.make(
  "import",
  { program, format, batchLines, file },
  (o) =>
    run({
      programId: o.program,
      path: o.file,
      format: Option.getOrElse(o.format, () => (o.file.toLowerCase().endsWith(".csv") ? "csv" : "ndjson")),
      batchLines: Option.getOrUndefined(o.batchLines)
    })
)
