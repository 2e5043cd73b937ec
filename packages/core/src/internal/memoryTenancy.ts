/**
 * In-memory ports for tenants and their settings: directory, members, credentials, usage and
 * experiments. Every method is one atomic `run` over the shared state.
 */
import { Option } from "effect"
import type { Context } from "effect"
import { ApiKey, Experiment, OAuthGrant, Program, Workspace } from "../Domain.js"
import type { ProgramId, UserHash, WorkspaceId } from "../Ids.js"
import type { CredentialStore, DirectoryStore, ExperimentStore, MemberStore, UsageStore } from "../Ports.js"
import { type MemoryState, pair, type Runner } from "./memoryState.js"

export const makeDirectory = (s: MemoryState, { run }: Runner): Context.Tag.Service<DirectoryStore> => {
  const j = s.journal
  const updateProgram = (
    id: ProgramId,
    patch: Partial<Pick<Program, "status" | "webhookSecretHash" | "policy" | "mode">>
  ) =>
    run(() => {
      const program = s.programs.get(id)
      if (program === undefined) return Option.none()
      const next = new Program({ ...program, ...patch })
      j.set(s.programs, id, next)
      return Option.some(next)
    })
  return {
    createWorkspace: (workspace) => run(() => j.set(s.workspaces, workspace.id, workspace)),
    workspace: (id) => run(() => Option.fromNullable(s.workspaces.get(id))),
    setPlan: (id, plan) =>
      run(() => {
        const workspace = s.workspaces.get(id)
        if (workspace === undefined) return Option.none()
        const next = new Workspace({ ...workspace, plan })
        j.set(s.workspaces, id, next)
        return Option.some(next)
      }),
    createProject: (project) => run(() => j.set(s.projects, project.id, project)),
    project: (id) => run(() => Option.fromNullable(s.projects.get(id))),
    projectBySiteKey: (siteKey) =>
      run(() => Option.fromNullable([...s.projects.values()].find((p) => p.siteKey === siteKey))),
    projectsOfWorkspaces: (ids) =>
      run(() => {
        const wanted = new Set<string>(ids)
        return [...s.projects.values()].filter((p) => wanted.has(p.workspaceId))
      }),
    createProgram: (program) => run(() => j.set(s.programs, program.id, program)),
    program: (id) => run(() => Option.fromNullable(s.programs.get(id))),
    programByEventKey: (projectId, eventKey) =>
      run(() =>
        Option.fromNullable(
          [...s.programs.values()].find((p) => p.projectId === projectId && p.eventKey === eventKey)
        )
      ),
    programsOfProjects: (ids) =>
      run(() => {
        const wanted = new Set<string>(ids)
        return [...s.programs.values()].filter((p) => wanted.has(p.projectId))
      }),
    setProgramStatus: (id, status) => updateProgram(id, { status }),
    goLive: (id) =>
      run(() => {
        const program = s.programs.get(id)
        if (program === undefined || program.status !== "test") return false
        j.set(s.programs, id, new Program({ ...program, status: "live" }))
        return true
      }),
    setWebhookSecretHash: (id, hash) => updateProgram(id, { webhookSecretHash: hash }),
    setProgramPolicy: (id, policy, mode) => updateProgram(id, { policy, mode })
  }
}

export const makeMembers = (s: MemoryState, { run }: Runner): Context.Tag.Service<MemberStore> => {
  const j = s.journal
  const lookup = (projectId: string, userHash: UserHash) => {
    const member = s.aliases.get(pair(projectId, userHash)) ?? userHash
    return { userHash: member, timezone: Option.fromNullable(s.timezones.get(pair(projectId, member))) }
  }
  return {
    lookup: (projectId, userHash) => run(() => lookup(projectId, userHash)),
    lookupMany: (ids) => run(() => ids.map((id) => lookup(id.projectId, id.userHash))),
    setTimezone: (projectId, userHash, timezone) => run(() => j.set(s.timezones, pair(projectId, userHash), timezone)),
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

export const makeCredentials = (s: MemoryState, { run }: Runner): Context.Tag.Service<CredentialStore> => {
  const j = s.journal
  return {
    createApiKey: (key) => run(() => j.set(s.apiKeys, key.id, key)),
    apiKeyByHash: (tokenHash) =>
      run(() =>
        Option.fromNullable(
          [...s.apiKeys.values()].find((k) => k.tokenHash === tokenHash && k.revokedAt === undefined)
        )
      ),
    revokeApiKey: (id, at) =>
      run(() => {
        const key = s.apiKeys.get(id)
        if (key === undefined || key.revokedAt !== undefined) return Option.none()
        const next = new ApiKey({ ...key, revokedAt: at })
        j.set(s.apiKeys, id, next)
        return Option.some(next)
      }),
    createGrant: (grant) => run(() => j.set(s.grants, grant.id, grant)),
    grantByHash: (tokenHash) =>
      run(() =>
        Option.fromNullable(
          [...s.grants.values()].find((g) => g.tokenHash === tokenHash && g.revokedAt === undefined)
        )
      ),
    revokeGrant: (id, at) =>
      run(() => {
        const grant = s.grants.get(id)
        if (grant === undefined || grant.revokedAt !== undefined) return Option.none()
        const next = new OAuthGrant({ ...grant, revokedAt: at })
        j.set(s.grants, id, next)
        return Option.some(next)
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
    markActive: (workspaceId: WorkspaceId, month, member) => run(() => markActive(workspaceId, month, member)),
    markActiveMany: (entries) => run(() => entries.map((e) => markActive(e.workspaceId, e.month, e.member))),
    activeCount: (workspaceId, month) => run(() => s.usage.get(pair(workspaceId, month))?.size ?? 0)
  }
}

export const makeExperiments = (s: MemoryState, { run }: Runner): Context.Tag.Service<ExperimentStore> => {
  const j = s.journal
  const running = (programId: ProgramId) =>
    [...s.experiments.values()].find((e) => e.programId === programId && e.endedAt === undefined)
  return {
    start: (experiment) =>
      run(() => {
        if (running(experiment.programId) !== undefined) return false
        j.set(s.experiments, experiment.id, experiment)
        return true
      }),
    running: (programId) => run(() => Option.fromNullable(running(programId))),
    end: (programId, at) =>
      run(() => {
        const experiment = running(programId)
        if (experiment === undefined) return Option.none()
        const next = new Experiment({ ...experiment, endedAt: at })
        j.set(s.experiments, experiment.id, next)
        return Option.some(next)
      })
  }
}
