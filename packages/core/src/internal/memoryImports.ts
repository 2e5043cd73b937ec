/**
 * The in-memory `ImportStore`: jobs, identities and touched members in the shared state, days
 * added to the same day sets ingest writes, all under the adapter's lock and undo journal.
 */
import type { Context } from "effect"
import { Effect, Option } from "effect"
import { StorageError } from "../Errors.js"
import type { LocalDate } from "../Calendar.js"
import type { UserHash } from "../Ids.js"
import { type ImportJob, type ImportStore, maxRejections } from "../ImportStore.js"
import { keyOf, type MemoryState, pair, type Runner } from "./memoryState.js"

export const makeImports = (s: MemoryState, { run }: Runner): Context.Tag.Service<ImportStore> => {
  const j = s.journal
  const addDay = (key: string, day: LocalDate) => {
    let days = s.days.get(key)
    if (days === undefined) {
      days = new Set()
      j.set(s.days, key, days)
    }
    j.add(days, day)
  }
  return {
    create: (job) => run(() => j.set(s.imports, job.id, job)),
    get: (id) => run(() => Option.fromNullable(s.imports.get(id))),
    resumable: (programId, source) =>
      run(() => {
        let found: ImportJob | undefined
        for (const job of s.imports.values()) {
          if (
            job.programId !== programId || job.source !== source || source === "" ||
            (job.status !== "running" && job.status !== "interrupted")
          ) {
            continue
          }
          if (found === undefined || job.startedAt.getTime() >= found.startedAt.getTime()) found = job
        }
        return Option.fromNullable(found)
      }),
    resume: (id, at) =>
      run(() => {
        const job = s.imports.get(id)
        if (job === undefined || (job.status !== "running" && job.status !== "interrupted")) return false
        j.set(s.imports, id, { ...job, status: "running", finishedAt: undefined, heartbeatAt: at })
        return true
      }),
    heartbeat: (id, at) =>
      run(() => {
        const job = s.imports.get(id)
        if (job === undefined || job.status !== "running") return false
        j.set(s.imports, id, { ...job, heartbeatAt: at })
        return true
      }),
    loaded: (id) =>
      run(() => {
        const job = s.imports.get(id)
        if (job !== undefined) j.set(s.imports, id, { ...job, loaded: true })
      }),
    claimStale: (staleBefore, at) =>
      run(() => {
        const claimed: Array<ImportJob> = []
        for (const job of s.imports.values()) {
          if (job.status !== "running" || job.heartbeatAt.getTime() >= staleBefore.getTime()) continue
          const next: ImportJob = job.loaded
            ? { ...job, heartbeatAt: at }
            : { ...job, status: "interrupted", finishedAt: at, heartbeatAt: at }
          j.set(s.imports, job.id, next)
          claimed.push(next)
        }
        return claimed
      }),
    load: (batch) =>
      Effect.flatMap(
        run((): ImportJob | undefined => {
          const job = s.imports.get(batch.importId)
          if (job === undefined || job.status !== "running") return undefined
          let touched = s.importMembers.get(batch.importId)
          if (touched === undefined) {
            touched = new Set<UserHash>()
            j.set(s.importMembers, batch.importId, touched)
          }
          let imported = 0
          for (const a of batch.actions) {
            if (!j.add(s.importIdentities, pair(batch.programId, a.identity))) continue
            imported++
            addDay(
              keyOf({ projectId: batch.projectId, programId: batch.programId, userHash: a.userHash, ledger: "live" }),
              a.day
            )
            j.add(touched, a.userHash)
          }
          for (const u of batch.touched) j.add(touched, u)
          for (const z of batch.zones) j.set(s.timezones, pair(z.projectId, z.userHash), z.timezone)
          const room = Math.max(0, maxRejections - job.rejected.length)
          const next: ImportJob = {
            ...job,
            received: job.received + batch.received,
            imported: job.imported + imported,
            duplicates: job.duplicates + batch.duplicates + batch.actions.length - imported,
            rejected: room === 0 ? job.rejected : [...job.rejected, ...batch.rejected.slice(0, room)],
            committedLine: batch.committedLine
          }
          j.set(s.imports, job.id, next)
          return next
        }),
        (job) =>
          job === undefined
            ? Effect.fail(new StorageError({ message: `ImportStore.load: no running import ${batch.importId}` }))
            : Effect.succeed(job)
      ),
    known: (_projectId, programId, identities) =>
      run(() => identities.map((identity) => s.importIdentities.has(pair(programId, identity)))),
    members: (importId, after, limit) =>
      run(() =>
        [...(s.importMembers.get(importId) ?? [])]
          .filter((u) => after === undefined || u > after)
          .sort()
          .slice(0, limit)
      ),
    achieve: (achievements) =>
      run(() => {
        for (const a of achievements) {
          const k = keyOf(a)
          let byMilestone = s.achievements.get(k)
          if (byMilestone === undefined) {
            byMilestone = new Map()
            j.set(s.achievements, k, byMilestone)
          }
          if (!byMilestone.has(a.milestoneId)) j.set(byMilestone, a.milestoneId, a)
        }
      }),
    finish: (id, status, at) =>
      run(() => {
        const job = s.imports.get(id)
        // Only a running job ends: an owner that lost it to `claimStale` does not overwrite the claim.
        if (job !== undefined && job.status === "running") j.set(s.imports, id, { ...job, status, finishedAt: at })
      })
  }
}
