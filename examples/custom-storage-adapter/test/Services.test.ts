/**
 * The adapter under the real services: provision, count an action through `Ingest` (its row keeps
 * the month its member was counted in), read it back through `StateQuery`, then reopen the
 * database file and find the streak still there.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Domain,
  EventInput,
  Ids,
  Ingest,
  OutboxSignal,
  Ports,
  Provisioning,
  SecretBox,
  Services,
  StateQuery
} from "@streaks/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqliteStorage } from "../src/index.js"
import * as TempFile from "./support/TempFile.js"

// A fixed key: the second opening of the file must read what the first one sealed.
const servicesOn = (filename: string) =>
  Services.layer.pipe(
    Layer.provide(OutboxSignal.layerNoop),
    Layer.provide(SecretBox.layer(Redacted.make("example-only-secret-key"))),
    Layer.provideMerge(SqliteStorage.layer({ filename }))
  )

describe("core services on SQLite", () => {
  it.scopedLive("an action counted through Ingest is read back by StateQuery, also after reopening the file", () =>
    Effect.gen(function*() {
      const filename = yield* TempFile.databaseFile

      const programId = yield* Effect.gen(function*() {
        const provisioning = yield* Provisioning.Provisioning
        const ingest = yield* Ingest.Ingest
        const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "starter" })
        const { project } = yield* provisioning.createProject({
          workspaceId: workspace.id,
          name: "App",
          allowedOrigins: []
        })
        const { program } = yield* provisioning.createProgram({
          projectId: project.id,
          name: "Daily lesson",
          eventKey: "lesson_completed",
          milestones: [{ target: 1, msg: "First day!" }]
        })
        yield* provisioning.setProgramStatus(program.id, "live")
        // The layer brings the stores core builds on the Catalog, read back from SQLite.
        const stored = yield* (yield* Ports.DirectoryStore).program(program.id)
        assert.strictEqual(Option.getOrThrow(stored).status, "live")
        const action = yield* EventInput.decodeCountAction({ userHash: "member-42", tz: "Europe/Paris" })
        const answer = yield* ingest.record({
          project,
          action,
          auth: { door: "api", programId: Ids.unsafe("ProgramId", program.id) }
        })
        assert.deepStrictEqual(answer.body, { counted: true })
        const rows = yield* (yield* Ports.StreakStore).rows({
          keys: [
            new Domain.StreakKey({
              projectId: project.id,
              programId: program.id,
              userHash: "member-42" as Ids.UserHash,
              ledger: "live"
            })
          ]
        })
        assert.deepStrictEqual(rows.map((row) => row.run), [1])
        return program.id
      }).pipe(Effect.provide(servicesOn(filename)))

      const streak = yield* Effect.flatMap(StateQuery.StateQuery, (state) => state.memberStreak(programId, "member-42"))
        .pipe(
          Effect.provide(servicesOn(filename))
        )
      assert.deepInclude(streak, { current: 1, best: 1, todayDone: true, isLive: true })
    }))
})
