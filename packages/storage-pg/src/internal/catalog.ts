/**
 * `Catalog` on Postgres: the records of tenancy and configuration in their own tables, each kind
 * described once (its table, the columns of each field and how a value is stored in them), read
 * and written by four statements built from that description.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { type CredentialRef, outagesToJson, type Program } from "@streaks/core/Domain"
import type { StorageError } from "@streaks/core/Errors"
import type { Catalog, CatalogKind, CatalogRecords } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import {
  decodeApiKey,
  decodeAuthorizationCode,
  decodeExperiment,
  decodeGrant,
  decodeInvite,
  decodeOAuthClient,
  decodeOAuthToken,
  decodeProgram,
  decodeProject,
  decodeSession,
  decodeSubscription,
  decodeUser,
  decodeWorkspace,
  membershipsJson,
  milestonesJson,
  policyJson,
  settingsJson
} from "./catalogRecords.js"
import { type Ctx, io, type TableName } from "./sql.js"

type Row = Record<string, unknown>

/** The Postgres types of the catalog's columns (each value is sent as text or an array and cast). */
type Cast = "text" | "text[]" | "boolean" | "integer" | "timestamptz" | "timestamptz[]" | "jsonb"

/** How a field of a record is stored: its columns, and the value of each. */
interface Field {
  readonly columns: ReadonlyArray<{ readonly name: string; readonly cast: Cast }>
  /** The field's value (never `undefined`: an absent field is NULL in every column). */
  readonly encode: (value: any) => ReadonlyArray<unknown>
}

const column = (name: string, cast: Cast, encode: (value: any) => unknown = (value) => value): Field => ({
  columns: [{ name, cast }],
  encode: (value) => [encode(value)]
})

const text = (name: string) => column(name, "text")
const texts = (name: string) => column(name, "text[]", (values: ReadonlyArray<string>) => [...values])
// Instants travel as ISO text: the same whether alone or in an array of a selection.
const instant = (name: string) => column(name, "timestamptz", (date: Date) => date.toISOString())

/** One kind: its table, every field of its records, and the decoder of its rows. */
interface Kind<R> {
  readonly table: TableName
  readonly fields: { readonly [F in keyof R]-?: Field }
  readonly decode: (row: Row) => R
  /**
   * The table's primary key is (project_id, id), so that it can be distributed by project: the
   * id alone is kept unique by `insert` itself.
   */
  readonly idInProject: boolean
}

const kinds: { readonly [K in CatalogKind]: Kind<CatalogRecords[K]> } = {
  workspace: {
    table: "workspaces",
    fields: { id: text("id"), name: text("name"), plan: text("plan"), createdAt: instant("created_at") },
    decode: decodeWorkspace,
    idInProject: false
  },
  project: {
    table: "projects",
    fields: {
      id: text("id"),
      workspaceId: text("workspace_id"),
      siteKey: text("site_key"),
      name: text("name"),
      allowedOrigins: texts("allowed_origins"),
      timezone: text("timezone"),
      browserCounting: text("browser_counting"),
      legacyNoOriginIngest: column("legacy_no_origin_ingest", "boolean"),
      serverTokenHash: text("server_token_hash"),
      signingSecretSealed: text("signing_secret_sealed"),
      createdAt: instant("created_at")
    },
    decode: decodeProject,
    idInProject: false
  },
  program: {
    table: "programs",
    fields: {
      projectId: text("project_id"),
      id: text("id"),
      name: text("name"),
      eventKey: text("event_key"),
      status: text("status"),
      mode: text("mode"),
      webhookSecretHash: text("webhook_secret_hash"),
      milestones: column("milestones", "jsonb", milestonesJson),
      settings: column("settings", "jsonb", settingsJson),
      policy: column("policy", "jsonb", policyJson),
      outages: column("outages", "jsonb", (o: Program["outages"]) => (o === undefined ? null : outagesToJson(o))),
      outagesRevision: column("outages_revision", "integer"),
      createdAt: instant("created_at")
    },
    decode: decodeProgram,
    idInProject: true
  },
  subscription: {
    table: "subscriptions",
    fields: {
      projectId: text("project_id"),
      id: text("id"),
      workspaceId: text("workspace_id"),
      programId: text("program_id"),
      url: text("url"),
      eventTypes: texts("event_types"),
      secretSealed: text("secret_sealed"),
      createdBy: {
        columns: [{ name: "created_by_type", cast: "text" }, { name: "created_by_id", cast: "text" }],
        encode: (ref: CredentialRef) => [ref.type, ref.id]
      },
      createdAt: instant("created_at")
    },
    decode: decodeSubscription,
    idInProject: true
  },
  apiKey: {
    table: "api_keys",
    fields: {
      id: text("id"),
      workspaceId: text("workspace_id"),
      name: text("name"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      revokedAt: instant("revoked_at")
    },
    decode: decodeApiKey,
    idInProject: false
  },
  grant: {
    table: "oauth_grants",
    fields: {
      id: text("id"),
      workspaceIds: texts("workspace_ids"),
      appName: text("app_name"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      revokedAt: instant("revoked_at"),
      clientId: text("client_id"),
      userId: text("user_id")
    },
    decode: decodeGrant,
    idInProject: false
  },
  oauthClient: {
    table: "oauth_clients",
    fields: {
      id: text("id"),
      name: text("name"),
      redirectUris: texts("redirect_uris"),
      secretHash: text("secret_hash"),
      createdAt: instant("created_at"),
      revokedAt: instant("revoked_at")
    },
    decode: decodeOAuthClient,
    idInProject: false
  },
  authorizationCode: {
    table: "oauth_codes",
    fields: {
      id: text("id"),
      codeHash: text("code_hash"),
      clientId: text("client_id"),
      userId: text("user_id"),
      redirectUri: text("redirect_uri"),
      codeChallenge: text("code_challenge"),
      workspaceIds: texts("workspace_ids"),
      createdAt: instant("created_at"),
      expiresAt: instant("expires_at"),
      usedAt: instant("used_at"),
      grantId: text("grant_id")
    },
    decode: decodeAuthorizationCode,
    idInProject: false
  },
  oauthToken: {
    table: "oauth_tokens",
    fields: {
      id: text("id"),
      tokenHash: text("token_hash"),
      kind: text("kind"),
      grantId: text("grant_id"),
      createdAt: instant("created_at"),
      expiresAt: instant("expires_at"),
      usedAt: instant("used_at"),
      revokedAt: instant("revoked_at")
    },
    decode: decodeOAuthToken,
    idInProject: false
  },
  experiment: {
    table: "experiments",
    fields: {
      projectId: text("project_id"),
      id: text("id"),
      programId: text("program_id"),
      holdoutPercent: column("holdout_percent", "integer"),
      startedAt: instant("started_at"),
      endedAt: instant("ended_at")
    },
    decode: decodeExperiment,
    idInProject: true
  },
  user: {
    table: "users",
    fields: {
      id: text("id"),
      email: text("email"),
      emailKey: text("email_key"),
      name: text("name"),
      memberships: column("memberships", "jsonb", membershipsJson),
      passwordHash: text("password_hash"),
      failedSignIns: column(
        "failed_sign_ins",
        "timestamptz[]",
        (dates: ReadonlyArray<Date>) => dates.map((d) => d.toISOString())
      ),
      createdAt: instant("created_at")
    },
    decode: decodeUser,
    idInProject: false
  },
  session: {
    table: "sessions",
    fields: {
      id: text("id"),
      userId: text("user_id"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      lastSeenAt: instant("last_seen_at"),
      expiresAt: instant("expires_at")
    },
    decode: decodeSession,
    idInProject: false
  },
  invite: {
    table: "invites",
    fields: {
      id: text("id"),
      userId: text("user_id"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      expiresAt: instant("expires_at"),
      usedAt: instant("used_at")
    },
    decode: decodeInvite,
    idInProject: false
  }
}

// RETURNING has no order; a plain UPDATE or DELETE, unlike one wrapped in a data-modifying CTE,
// is one Citus can plan on a reference table. Sorted as `find` sorts: by id, bytewise.
const byId = (rows: ReadonlyArray<Row>): ReadonlyArray<Row> =>
  [...rows].sort((a, b) => Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id))))

const valuesOf = (field: Field, value: unknown): ReadonlyArray<unknown> =>
  value === undefined ? field.columns.map(() => null) : field.encode(value)

export const makeCatalog = ({ query, prefix, sql, t }: Ctx): Catalog["Type"] => {
  const cast = (value: unknown, type: string) => sql`${value}::${sql.literal(type)}`

  /** The columns of `fields` set to their values in `record` (absent fields: NULL). */
  const assignments = (fields: Record<string, Field>, record: Record<string, unknown>) =>
    Object.entries(fields).flatMap(([name, field]) => {
      const values = valuesOf(field, record[name])
      return field.columns.map((c, i) => ({ column: sql`${sql(c.name)}`, value: cast(values[i], c.cast) }))
    })

  // A value is equality, an array any of its values (none for an empty one), `null` absence.
  // Selectable fields have one column each (`CatalogFields`).
  const where = (kind: Kind<unknown>, selection: object): Fragment =>
    sql.and(
      Object.entries(selection).flatMap(([name, wanted]) => {
        const field = (kind.fields as Record<string, Field>)[name]
        if (wanted === undefined || field === undefined) return []
        const { cast: type, name: col } = field.columns[0]!
        if (wanted === null) return [sql`${sql(col)} IS NULL`]
        if (Array.isArray(wanted)) {
          return [sql`${sql(col)} = ANY(${cast(wanted.map((w) => field.encode(w)[0]), `${type}[]`)})`]
        }
        return [sql`${sql(col)} = ${cast(field.encode(wanted)[0], type)}`]
      })
    )

  // The id of a kind kept under (project_id, id): a transaction-scoped advisory lock on the id (in a
  // lock space of the table's own) serialises concurrent inserts of one id, and the insert that
  // follows sees a committed one (its own snapshot, taken after the lock). In a transaction of its
  // own unless the caller has one; inserts are rare (provisioning).
  const insertNew = (
    kind: Kind<unknown>,
    record: Record<string, unknown>,
    statement: Effect.Effect<ReadonlyArray<Row>, SqlError>
  ) => {
    const insert = Effect.map(statement, (rows) => rows.length > 0)
    if (!kind.idInProject) return insert
    const lock = query(sql`SELECT pg_advisory_xact_lock(hashtext(${`${prefix}${kind.table}`}), hashtext(${record.id}))`)
    const locked = Effect.zipRight(lock, insert)
    return Effect.flatMap(
      Effect.serviceOption(SqlClient.TransactionConnection),
      (tx) => Option.isSome(tx) ? locked : sql.withTransaction(locked)
    )
  }

  const insert = (kind: Kind<unknown>, record: Record<string, unknown>) => {
    const set = assignments(kind.fields as Record<string, Field>, record)
    const columns = sql.csv(set.map((a) => a.column))
    const values = sql.csv(set.map((a) => a.value))
    const table = t[kind.table]
    // Every unique index of the table arbitrates (DO NOTHING without a target): the primary key, a
    // project's site key, a program's running experiment.
    const add = query(
      sql`INSERT INTO ${table} (${columns}) VALUES (${values}) ON CONFLICT DO NOTHING RETURNING 1 AS ok`
    )
    // Two plain statements rather than one `INSERT … SELECT … WHERE NOT EXISTS`, which Citus cannot
    // plan on a reference table (docs/scaling.md#citus-by-project); the lock keeps them atomic.
    return insertNew(
      kind,
      record,
      kind.idInProject
        ? Effect.flatMap(
          query(sql`SELECT 1 AS taken FROM ${table} WHERE id = ${record.id} LIMIT 1`),
          (taken) => taken.length > 0 ? Effect.succeed([]) : add
        )
        : add
    )
  }

  // Ordered by id compared bytewise (COLLATE "C"), as the other adapters compare strings, whatever
  // the database's collation.
  const find = (kind: Kind<unknown>, selection: object) =>
    Effect.map(
      query(sql`SELECT * FROM ${t[kind.table]} WHERE ${where(kind, selection)} ORDER BY id COLLATE "C"`),
      (rows) => rows.map(kind.decode)
    )

  // One UPDATE: Postgres re-checks its WHERE on a row another transaction changed meanwhile, so of
  // concurrent updates whose selection names what the others change, one changes the row.
  const update = (kind: Kind<unknown>, selection: object, changes: object) => {
    const fields = kind.fields as Record<string, Field>
    const set = Object.entries(changes).flatMap(([name, value]) => {
      const field = fields[name]
      if (name === "id" || field === undefined) return []
      const values = valuesOf(field, value)
      return field.columns.map((c, i) => sql`${sql(c.name)} = ${cast(values[i], c.cast)}`)
    })
    if (set.length === 0) return find(kind, selection)
    return Effect.map(
      query(sql`UPDATE ${t[kind.table]} SET ${sql.csv(set)} WHERE ${where(kind, selection)} RETURNING *`),
      (rows) => byId(rows).map(kind.decode)
    )
  }

  const remove = (kind: Kind<unknown>, selection: object) =>
    Effect.map(
      query(sql`DELETE FROM ${t[kind.table]} WHERE ${where(kind, selection)} RETURNING *`),
      (rows) => byId(rows).map(kind.decode)
    )

  const kindOf = (kind: CatalogKind) => kinds[kind] as unknown as Kind<unknown>
  type Records<K extends CatalogKind> = Effect.Effect<ReadonlyArray<CatalogRecords[K]>, StorageError>

  return {
    insert: (kind, record) =>
      insert(kindOf(kind), record as unknown as Record<string, unknown>).pipe(io(`Catalog.insert(${kind})`)),
    find: (kind, selection) => find(kindOf(kind), selection).pipe(io(`Catalog.find(${kind})`)) as Records<typeof kind>,
    update: (kind, selection, changes) =>
      update(kindOf(kind), selection, changes).pipe(io(`Catalog.update(${kind})`)) as Records<typeof kind>,
    remove: (kind, selection) =>
      remove(kindOf(kind), selection).pipe(io(`Catalog.remove(${kind})`)) as Records<typeof kind>
  }
}
