/**
 * @streaks/storage-conformance: the suite every storage adapter of `@streaks/core` runs, and the
 * test-data builders it (and the tests of other packages) use.
 */
export * as Fixtures from "./Fixtures.js"
export * as StorageConformance from "./StorageConformance.js"
