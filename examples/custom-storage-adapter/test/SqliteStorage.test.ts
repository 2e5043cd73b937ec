/**
 * The whole proof that the adapter is correct: core's conformance suite, the same one the
 * in-memory and Postgres adapters run, on a fresh database file.
 */
import { storageConformance } from "@streaks/storage-conformance/StorageConformance"
import { Effect, Layer } from "effect"
import { SqliteStorage } from "../src/index.js"
import * as TempFile from "./support/TempFile.js"

storageConformance(
  "sqlite",
  Layer.unwrapScoped(Effect.map(TempFile.databaseFile, (filename) => SqliteStorage.layer({ filename })))
)
