/**
 * What a workspace uses, as pure rules: a member with at least one counted live action in a UTC
 * calendar month is one active streaker of that month, per workspace, and a month is over the plan
 * when it has more active streakers than the plan includes (docs/api.md#get-usage).
 */
import * as Calendar from "./Calendar.js"
import { type Plan, planLimit } from "./Domain.js"
import type * as Ids from "./Ids.js"

/** One member active in one UTC month of a workspace: what `UsageStore.markActive` counts once. */
export interface UsageEntry {
  readonly workspaceId: Ids.WorkspaceId
  readonly month: string
  readonly member: string
}

/**
 * The usage entry of a counted live action: the member key `${projectId}:${userHash}` in the UTC
 * month of `at` (the action's `ts`, so a late action counts in its own month).
 */
export const activeEntry = (
  workspaceId: Ids.WorkspaceId,
  projectId: Ids.ProjectId,
  userHash: Ids.UserHash,
  at: Date
): UsageEntry => ({ workspaceId, month: Calendar.month(at), member: `${projectId}:${userHash}` })

export interface Usage {
  /** "YYYY-MM" (UTC). */
  readonly month: string
  readonly plan: Plan
  readonly limit: number
  readonly activeStreakers: number
  /** More active streakers than the plan includes (reaching the limit exactly is not over it). */
  readonly overLimit: boolean
}

const monthPattern = /^\d{4}-(0[1-9]|1[0-2])$/

/** Whether `month` is a UTC month as the usage routes take it: "YYYY-MM". */
export const isMonth = (month: string): boolean => monthPattern.test(month)

/** The usage of `month` with `activeStreakers`, judged against the limit of `plan`. */
export const usageOf = (plan: Plan, month: string, activeStreakers: number): Usage => {
  const limit = planLimit[plan]
  return { month, plan, limit, activeStreakers, overLimit: activeStreakers > limit }
}
