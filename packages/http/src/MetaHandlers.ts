/** Health (process up) and readiness (storage reachable, migrations applied): docs/api.md#probes. */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "./Api.js"
import { Jobs } from "./Jobs.js"

export const layer = HttpApiBuilder.group(Api, "meta", (handlers) =>
  Effect.map(Jobs, (jobs) =>
    handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        Effect.map(jobs.ready, (ready) =>
          ready
            ? { status: "ok" as const }
            : HttpServerResponse.unsafeJson({ error: "SERVICE_UNAVAILABLE" }, { status: 503 })))))
