/**
 * The README walkthrough through the typed client: provision a workspace, project and program
 * with the admin routes, record a member's action from "your backend" (the server door), and
 * read the member's state as the widget does.
 */
import { Ids } from "@streaks/core"
import { Effect } from "effect"
import * as Client from "./Client.js"

export interface Result {
  readonly siteKey: string
  readonly serverToken: string
  readonly programId: string
  readonly recorded: {
    readonly ok: true
    readonly counted?: boolean | undefined
    readonly duplicate?: boolean | undefined
  }
  readonly streak: { readonly current: number; readonly best: number; readonly todayDone: boolean }
  readonly isLive: boolean
}

export const run = (options: { readonly baseUrl: string; readonly adminToken: string; readonly userHash?: string }) =>
  Effect.gen(function*() {
    const client = yield* Client.make(options)
    // Member ids are branded: `UserHash.make` checks one (≤ 256 chars, not an e-mail) before it is sent.
    const userHash = Ids.UserHash.make(options.userHash ?? "member-42")

    // Admin routes (X-Admin-Token): the tenant, once. Secrets are shown in these answers only.
    const workspace = yield* client.admin.createWorkspace({ payload: { name: "Acme", plan: "starter" } })
    const project = yield* client.admin.createProject({
      payload: {
        workspaceId: workspace.id,
        name: "Acme app",
        allowedOrigins: ["https://app.example.com"],
        timezone: "Europe/Paris"
      }
    })
    const program = yield* client.admin.createProgram({
      payload: {
        projectId: project.id,
        name: "Daily lesson",
        eventKey: "lesson_completed",
        milestones: [{ target: 3, msg: "Three days in a row!" }]
      }
    })

    // Your backend records an action (X-Streak-Server-Token). The first real action of a test
    // program makes it live.
    const recorded = yield* client.ingest.server({
      payload: { siteKey: project.siteKey, userHash, event: "lesson_completed", tz: "Europe/Paris" },
      headers: { "x-streak-server-token": project.serverToken }
    })

    // The member's state, as the widget reads it (a call without Origin needs the server token).
    const state = yield* client.ingest.state({
      urlParams: { siteKey: project.siteKey, userHash, event: "lesson_completed" },
      headers: { "x-streak-server-token": project.serverToken }
    })

    return {
      siteKey: project.siteKey,
      serverToken: project.serverToken,
      programId: program.id,
      recorded,
      streak: { current: state.streak.current, best: state.streak.best, todayDone: state.streak.todayDone },
      isLive: state.meta.isLive
    } satisfies Result
  })
