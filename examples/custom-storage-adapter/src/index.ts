/** A storage adapter for `@streaks/core` on SQLite. */
export * as Migrations from "./Migrations.js"
export * as SqliteStorage from "./SqliteStorage.js"
