/**
 * The in-memory `Catalog`: tenancy and configuration records in one map per kind, selected by
 * equality on their fields. Every call is one atomic `run` over the shared state.
 */
import type { Context } from "effect"
import { type Catalog, type CatalogKind, type CatalogRecords, catalogSchemas } from "../Ports.js"
import type { MemoryState, Runner } from "./memoryState.js"

// What a record holds that no other record of its kind may hold besides the id: a project's
// siteKey, a running experiment's program, a user's e-mail key.
const uniqueKeys: { readonly [K in CatalogKind]?: (record: CatalogRecords[K]) => ReadonlyArray<unknown> } = {
  project: (project) => [project.siteKey],
  experiment: (experiment) => experiment.endedAt === undefined ? [experiment.programId] : [],
  user: (user) => [user.emailKey]
}

// Dates are compared by instant, everything else a selection names is a string.
const same = (value: unknown, wanted: unknown): boolean =>
  value instanceof Date && wanted instanceof Date ? value.getTime() === wanted.getTime() : value === wanted

/** A selection's rule for one field: a value matches itself, an array any of its values, `null` absence. */
const fieldMatches = (value: unknown, wanted: unknown): boolean => {
  if (wanted === null) return value === undefined
  if (value === undefined) return false
  if (Array.isArray(wanted)) return wanted.some((w) => same(value, w))
  return same(value, wanted)
}

const byId = (a: { readonly id: string }, b: { readonly id: string }): number => a.id < b.id ? -1 : a.id > b.id ? 1 : 0

export const makeCatalog = (s: MemoryState, { run }: Runner): Context.Tag.Service<Catalog> => {
  const j = s.journal

  const select = <K extends CatalogKind>(kind: K, where: object): Array<CatalogRecords[K]> => {
    const records: Map<string, CatalogRecords[K]> = s.catalog[kind]
    const conditions = Object.entries(where).filter(([, wanted]) => wanted !== undefined)
    // A selection by id reads those records only; any other scans the kind.
    const id: unknown = (where as { readonly id?: unknown }).id
    const candidates = typeof id === "string"
      ? [records.get(id)]
      : Array.isArray(id)
      ? [...new Set(id as ReadonlyArray<string>)].map((i) => records.get(i))
      : [...records.values()]
    return candidates
      .filter((record): record is CatalogRecords[K] =>
        record !== undefined &&
        conditions.every(([field, wanted]) =>
          fieldMatches((record as unknown as Record<string, unknown>)[field], wanted)
        )
      )
      .sort(byId)
  }

  const breaksUniqueness = <K extends CatalogKind>(kind: K, record: CatalogRecords[K]): boolean => {
    const records: Map<string, CatalogRecords[K]> = s.catalog[kind]
    if (records.has(record.id)) return true
    const keysOf = uniqueKeys[kind] as ((record: CatalogRecords[K]) => ReadonlyArray<unknown>) | undefined
    if (keysOf === undefined) return false
    const keys = keysOf(record)
    if (keys.length === 0) return false
    for (const other of records.values()) {
      if (keysOf(other).some((key) => keys.includes(key))) return true
    }
    return false
  }

  return {
    insert: (kind, record) =>
      run(() => {
        if (breaksUniqueness(kind, record)) return false
        j.set(s.catalog[kind], record.id, record)
        return true
      }),
    find: (kind, where) => run(() => select(kind, where)),
    update: (kind, where, changes) =>
      run(() =>
        select(kind, where).map((record) => {
          // A new record, never one changed in place: that keeps the journal's undo exact.
          const next = new catalogSchemas[kind]({ ...record, ...changes, id: record.id })
          j.set(s.catalog[kind], record.id, next)
          return next
        })
      ),
    remove: (kind, where) =>
      run(() =>
        select(kind, where).map((record) => {
          j.delete(s.catalog[kind], record.id)
          return record
        })
      )
  }
}
