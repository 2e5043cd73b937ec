/**
 * The programs a connection reaches (`GET /v1/api/programs`): a hidden trigger that feeds the
 * program dropdown of every trigger, the action and the search.
 */
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Server from "./Server.js"

interface Program {
  readonly id: string
  readonly name: string
  readonly eventKey: string
  readonly status: "test" | "live"
  readonly project: { readonly id: string; readonly siteKey: string; readonly name: string }
}

/** One dropdown entry: `label` names the project too, since two projects may share a program name. */
export const record = (p: Program) => ({
  id: p.id,
  name: p.name,
  label: `${p.name} (${p.project.name}, ${p.status})`,
  eventKey: p.eventKey,
  status: p.status,
  projectId: p.project.id,
  projectName: p.project.name,
  siteKey: p.project.siteKey
})

export const list = async (z: ZObject, bundle: Bundle) => {
  const response = await z.request<ReadonlyArray<Program>>({ url: Server.apiUrl(bundle, "/programs"), method: "GET" })
  return response.data.map(record)
}

export const trigger = {
  key: "program",
  noun: "Program",
  display: {
    label: "List Programs",
    description: "Lists the programs this connection reaches, for the program dropdowns.",
    hidden: true
  },
  operation: {
    type: "polling" as const,
    perform: list,
    sample: {
      id: "prg_06eeqbmgm1r2ngy4xcbggwa5nr",
      name: "Lessons",
      label: "Lessons (App, live)",
      eventKey: "lesson_completed",
      status: "live",
      projectId: "prj_06eeqbmgm1n0h4acwe8c6as1pg",
      projectName: "App",
      siteKey: "site_06eeqbmgm1wt63qv9a8a1bvgb4"
    }
  }
}

/** The required program dropdown, filled by the hidden `program` trigger. */
export const field = (helpText: string) => ({
  key: "programId",
  label: "Program",
  required: true,
  dynamic: "program.id.label",
  altersDynamicFields: false,
  helpText
})
