/** @streaks/scheduler: interval sweeps of the due checks and housekeeping, safe with N replicas. */
export * as Scheduler from "./Scheduler.js"
