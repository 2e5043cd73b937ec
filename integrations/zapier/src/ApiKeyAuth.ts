/**
 * Authentication with a customer API key (`svc_api_…`), pasted by the user together with the
 * address of their Streaks server; sent as `Authorization: Bearer` on every customer API call.
 */
import * as Connection from "./Connection.js"

export const authentication = {
  type: "custom" as const,
  fields: [
    {
      key: "baseUrl",
      label: "Server URL",
      type: "string" as const,
      required: true,
      helpText: "The address of your Streaks server, for example `https://streaks.example.com` (no path)."
    },
    {
      key: "apiKey",
      label: "API Key",
      type: "password" as const,
      required: true,
      helpText: "A customer API key of your workspace (it starts with `svc_api_`). Your operator creates one " +
        "with `POST /admin/workspaces/{id}/api-keys`. Revoking the key removes every trigger subscription " +
        "this connection created."
    }
  ],
  test: Connection.test,
  connectionLabel: Connection.connectionLabel
}
