/** A workspace, project, program and API key, provisioned through the typed admin routes. */
import type { StreaksClient } from "../../src/StreaksClient.js"
import { ADMIN_TOKEN } from "./TestServer.js"

const asAdmin = { headers: { "x-admin-token": ADMIN_TOKEN } }

/** The value of a call that must succeed, or an error naming the call and its answer. */
const ok = <A>(
  what: string,
  result: { readonly data?: A; readonly error?: unknown; readonly response: Response }
): A => {
  if (result.data === undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`)
  return result.data
}

export const provision = async (raw: StreaksClient["raw"]) => {
  const workspace = ok(
    "workspace",
    await raw.POST("/admin/workspaces", { ...asAdmin, body: { name: "Acme", plan: "starter" } })
  )
  const project = ok(
    "project",
    await raw.POST("/admin/projects", {
      ...asAdmin,
      body: {
        workspaceId: workspace.id,
        name: "Acme app",
        allowedOrigins: ["https://app.example.com"],
        timezone: "UTC"
      }
    })
  )
  const program = ok(
    "program",
    await raw.POST("/admin/programs", {
      ...asAdmin,
      body: {
        projectId: project.id,
        name: "Daily lesson",
        eventKey: "lesson_completed",
        milestones: [{ target: 1, msg: "First day!" }]
      }
    })
  )
  const apiKey = ok(
    "api key",
    await raw.POST("/admin/workspaces/{id}/api-keys", {
      ...asAdmin,
      params: { path: { id: workspace.id } },
      body: { name: "backend" }
    })
  )
  return {
    siteKey: project.siteKey,
    serverToken: project.serverToken,
    programId: program.id,
    eventKey: program.eventKey,
    apiKey: apiKey.key
  }
}
