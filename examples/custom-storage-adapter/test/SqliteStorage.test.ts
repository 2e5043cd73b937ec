/**
 * The whole proof that the adapter is correct: core's conformance suite, the same one the
 * in-memory and Postgres adapters run, on a fresh database file.
 */
import { storageConformance } from "@streaks/core/testing"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqliteStorage } from "../src/index.js"

storageConformance("sqlite", SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "streaks-sqlite-")), "streaks.db") }))
