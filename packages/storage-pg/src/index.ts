/**
 * @streaks/storage-pg: every @streaks/core port on Postgres, its migrations, the embedded
 * default database and the test harness.
 */
export * as Distribution from "./Distribution.js"
export * as EmbeddedPostgres from "./EmbeddedPostgres.js"
export * as Migrations from "./Migrations.js"
export * as PgConnection from "./PgConnection.js"
export * as PgStorage from "./PgStorage.js"
