/**
 * `streaks demo`: provisions a demo workspace, project and program through the same services
 * the admin API uses, and returns the credentials to paste into the README walkthrough.
 */
import { Provisioning } from "@streaks/core"
import { Effect } from "effect"

export interface DemoCredentials {
  readonly workspaceId: string
  readonly projectId: string
  readonly siteKey: string
  readonly serverToken: string
  readonly signingSecret: string
  readonly programId: string
  readonly eventKey: string
  readonly webhookSecret: string
  readonly apiKey: string
}

export const provision = (options: { readonly origin?: string } = {}) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning.Provisioning
    const workspace = yield* provisioning.createWorkspace({ name: "Demo workspace", plan: "starter" })
    const project = yield* provisioning.createProject({
      workspaceId: workspace.id,
      name: "Demo project",
      allowedOrigins: [options.origin ?? "http://localhost:3000"],
      timezone: "UTC"
    })
    const program = yield* provisioning.createProgram({
      projectId: project.project.id,
      name: "Daily lesson",
      eventKey: "lesson_completed",
      milestones: [
        { target: 3, msg: "Three days in a row!" },
        { target: 7, msg: "One week streak!", rewardType: "coupon", rewardValue: "WEEK-ONE-10" }
      ]
    })
    const apiKey = yield* provisioning.createApiKey(workspace.id, "demo key")
    return {
      workspaceId: workspace.id,
      projectId: project.project.id,
      siteKey: project.project.siteKey,
      serverToken: project.serverToken,
      signingSecret: project.signingSecret,
      programId: program.program.id,
      eventKey: program.program.eventKey,
      webhookSecret: program.webhookSecret,
      apiKey: apiKey.key
    } satisfies DemoCredentials
  })
