/**
 * In-memory ports of per-tenant facts outside the catalog: members (zones, aliases) and usage.
 * Every method is one atomic `run` over the shared state.
 */
import { Option } from "effect"
import type { Context } from "effect"
import type { UserHash } from "../Ids.js"
import type { MemberStore, UsageStore } from "../Ports.js"
import { type MemoryState, pair, type Runner } from "./memoryState.js"

export const makeMembers = (s: MemoryState, { run }: Runner): Context.Tag.Service<MemberStore> => {
  const j = s.journal
  const lookup = (projectId: string, userHash: UserHash) => {
    const member = s.aliases.get(pair(projectId, userHash)) ?? userHash
    return { userHash: member, timezone: Option.fromNullable(s.timezones.get(pair(projectId, member))) }
  }
  return {
    lookup: (ids) => run(() => ids.map((id) => lookup(id.projectId, id.userHash))),
    setTimezones: (zones) =>
      run(() => {
        for (const z of zones) j.set(s.timezones, pair(z.projectId, z.userHash), z.timezone)
      }),
    link: (projectId, anonymousId, userHash) =>
      run(() => {
        const k = pair(projectId, anonymousId)
        const existing = s.aliases.get(k)
        if (existing === undefined) {
          j.set(s.aliases, k, userHash)
          // Ids that pointed at the anonymous id now point at its member.
          for (const [other, target] of s.aliases) {
            if (target === anonymousId && (JSON.parse(other) as Array<string>)[0] === projectId) {
              j.set(s.aliases, other, userHash)
            }
          }
          return "linked" as const
        }
        return existing === userHash ? "unchanged" as const : { linkedTo: existing }
      })
  }
}

export const makeUsage = (s: MemoryState, { run }: Runner): Context.Tag.Service<UsageStore> => {
  const j = s.journal
  const markActive = (workspaceId: string, month: string, member: string) => {
    const k = pair(workspaceId, month)
    let members = s.usage.get(k)
    if (members === undefined) {
      members = new Set()
      j.set(s.usage, k, members)
    }
    return j.add(members, member)
  }
  return {
    markActive: (entries) => run(() => entries.map((e) => markActive(e.workspaceId, e.month, e.member))),
    activeCount: (workspaceId, month) => run(() => s.usage.get(pair(workspaceId, month))?.size ?? 0)
  }
}
