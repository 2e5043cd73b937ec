/**
 * Helpers of the multi-row statements that apply a batch of actions (`lock`, `addDays`,
 * `markActive`): matching result rows back to the inputs they answer.
 */

/** A key of the four streak-key columns, for matching result rows to inputs. */
export const keyOf = (k: {
  readonly projectId: string
  readonly programId: string
  readonly userHash: string
  readonly ledger: string
}): string => `${k.projectId}\u0000${k.programId}\u0000${k.userHash}\u0000${k.ledger}`

/**
 * For "MUST return true only the first time" operations: an input repeated within one batch is
 * inserted once by the statement, so only its first occurrence reports the insert.
 */
export const firstOccurrences = <I>(inputs: ReadonlyArray<I>, key: (i: I) => string, inserted: ReadonlySet<string>) => {
  const seen = new Set<string>()
  return inputs.map((i) => {
    const k = key(i)
    if (seen.has(k)) return false
    seen.add(k)
    return inserted.has(k)
  })
}
