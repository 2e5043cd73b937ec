/**
 * What every authentication of the app shares: the connection test (`GET /v1/api/me`) and the
 * label Zapier shows for a connection, built from that test's answer.
 */
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Server from "./Server.js"

// Type aliases, not interfaces: Zapier's bundle fields want index-signature objects.
type Workspace = {
  readonly id: string
  readonly name: string
  readonly plan: string
}

/** The answer of `GET /v1/api/me`: an API key reaches one workspace, an OAuth token one or more. */
export type Me = {
  readonly workspace?: Workspace
  readonly workspaces?: ReadonlyArray<Workspace>
  readonly credential: { readonly type: "api_key" | "oauth"; readonly id: string }
}

/** The connection test: any 2xx proves the credential; its body feeds the label. */
export const test = async (z: ZObject, bundle: Bundle): Promise<Me> => {
  const response = await z.request<Me>({ url: Server.apiUrl(bundle, "/me"), method: "GET" })
  return response.data
}

/** "Acme (API key key_…)" or "Acme, Beta (OAuth)": the workspaces the connection reaches. */
export const label = (me: Me): string => {
  const names = (me.workspace !== undefined ? [me.workspace] : me.workspaces ?? []).map((w) => w.name)
  const workspaces = names.length > 0 ? names.join(", ") : "no workspace"
  return me.credential.type === "api_key"
    ? `${workspaces} (API key ${me.credential.id})`
    : `${workspaces} (OAuth)`
}

/** `connectionLabel`: Zapier hands the test's answer over as `bundle.inputData`. */
export const connectionLabel = (_z: ZObject, bundle: Bundle): string => label(bundle.inputData as unknown as Me)
