/**
 * Every core service as one layer, for embedders and the server: provide a storage adapter
 * (`MemoryStorage.layer`, `PgStorage.layer`, your own), a `SecretBox` and an `OutboxSignal`.
 */
import { Layer } from "effect"
import * as Accounts from "./Accounts.js"
import * as Aliases from "./Aliases.js"
import * as Audit from "./Audit.js"
import * as Connections from "./Connections.js"
import * as Credentials from "./Credentials.js"
import * as DueChecks from "./DueChecks.js"
import * as Experiments from "./Experiments.js"
import * as Forgiveness from "./Forgiveness.js"
import * as Imports from "./Imports.js"
import * as Ingest from "./Ingest.js"
import * as Metering from "./Metering.js"
import * as OAuthServer from "./OAuthServer.js"
import * as Passwords from "./Passwords.js"
import * as Provisioning from "./Provisioning.js"
import * as Reports from "./Reports.js"
import * as StateQuery from "./StateQuery.js"
import * as StreakPolicies from "./StreakPolicies.js"
import * as Subscriptions from "./Subscriptions.js"

export type Services =
  | Ingest.Ingest
  | StateQuery.StateQuery
  | Aliases.Aliases
  | DueChecks.DueChecks
  | Credentials.Credentials
  | Provisioning.Provisioning
  | Metering.Metering
  | Experiments.Experiments
  | Subscriptions.Subscriptions
  | Reports.Reports
  | StreakPolicies.StreakPolicies
  | OAuthServer.OAuthServer
  | Forgiveness.Forgiveness
  | Audit.Audit
  | Accounts.Accounts
  | Connections.Connections
  | Imports.Imports

/** How the batching services group their work (see `Ingest.BatchOptions`, `StateQuery.ReadOptions`). */
export interface Options {
  readonly ingest?: Ingest.BatchOptions
  readonly state?: StateQuery.ReadOptions
  readonly imports?: Imports.Options
}

/** Every core service, with chosen batching. */
export const layerWith = (options: Options) =>
  Layer.mergeAll(
    Ingest.layerWith(options.ingest ?? {}),
    StateQuery.layerWith(options.state ?? {}),
    Aliases.layer,
    DueChecks.layer,
    Credentials.layer,
    Provisioning.layer,
    Metering.layer,
    Experiments.layer,
    Subscriptions.layer,
    Reports.layer,
    StreakPolicies.layer,
    OAuthServer.layer,
    Forgiveness.layer,
    Accounts.layer.pipe(Layer.provide(Passwords.layer)),
    Connections.layer,
    Imports.layerWith(options.imports ?? {})
  ).pipe(Layer.provideMerge(Audit.layer))

/** Every core service, with the default batching. */
export const layer = layerWith({})
