/**
 * The Catalog port on SQLite: one descriptor per kind (its table, and the column of each field)
 * and four generic statements over them.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { CredentialRef, Outage } from "@streaks/core/Domain"
import {
  ApiKey,
  Experiment,
  Invite,
  Milestone,
  AuthorizationCode,
  OAuthClient,
  outagesFromJson,
  outagesToJson,
  OAuthGrant,
  OAuthToken,
  Program,
  ProgramSettings,
  Project,
  Session,
  Subscription,
  User,
  Workspace
} from "@streaks/core/Domain"
import type { Catalog, CatalogKind, CatalogRecords } from "@streaks/core/Ports"
import * as Policy from "@streaks/core/Policy"
import { Array as Arr, Effect, Order, Schema } from "effect"
import {
  type Codec,
  type Column,
  column,
  decode,
  encode,
  flag,
  insertNew,
  instant,
  json,
  number,
  port,
  type Row,
  text
} from "./sqlite.js"

interface Table<A> extends Codec<A> {
  readonly name: string
}

// A subscription's creator is kept in two columns (no selection names it).
const createdBy: Column<CredentialRef> = {
  name: "created_by_id",
  encode: (ref) => ({ created_by_type: ref.type, created_by_id: ref.id }),
  decode: (row) => ({ type: row.created_by_type as CredentialRef["type"], id: String(row.created_by_id) })
}

// The policy is stored as `Policy.toJson` gives it (NULL for a program without one, which counts
// with the default policy); decoding it makes the Schema class again.
const decodePolicy = Schema.decodeUnknownSync(Policy.Policy)
const policy = column<Policy.Policy>(
  "policy",
  (value) => JSON.stringify(Policy.toJson(value)),
  (stored) => decodePolicy(JSON.parse(String(stored)))
)

const tables: { readonly [K in CatalogKind]: Table<CatalogRecords[K]> } = {
  workspace: {
    name: "workspaces",
    Class: Workspace,
    columns: { id: text("id"), name: text("name"), plan: text("plan"), createdAt: instant("created_at") }
  },
  project: {
    name: "projects",
    Class: Project,
    columns: {
      id: text("id"),
      workspaceId: text("workspace_id"),
      siteKey: text("site_key"),
      name: text("name"),
      allowedOrigins: json("allowed_origins"),
      timezone: text("timezone"),
      browserCounting: text("browser_counting"),
      legacyNoOriginIngest: flag("legacy_no_origin_ingest"),
      serverTokenHash: text("server_token_hash"),
      signingSecretSealed: text("signing_secret_sealed"),
      createdAt: instant("created_at")
    }
  },
  program: {
    name: "programs",
    Class: Program,
    columns: {
      id: text("id"),
      projectId: text("project_id"),
      name: text("name"),
      eventKey: text("event_key"),
      status: text("status"),
      mode: text("mode"),
      webhookSecretHash: text("webhook_secret_hash"),
      milestones: json<ReadonlyArray<Milestone>>(
        "milestones",
        (list) => list.map((m: Milestone) => new Milestone(m, true))
      ),
      settings: json("settings", (settings) => new ProgramSettings(settings, true)),
      policy,
      outages: column<ReadonlyArray<Outage>>("outages", outagesToJson, outagesFromJson),
      outagesRevision: number("outages_revision"),
      createdAt: instant("created_at")
    }
  },
  subscription: {
    name: "subscriptions",
    Class: Subscription,
    columns: {
      id: text("id"),
      workspaceId: text("workspace_id"),
      projectId: text("project_id"),
      programId: text("program_id"),
      url: text("url"),
      eventTypes: json("event_types"),
      secretSealed: text("secret_sealed"),
      createdBy,
      createdAt: instant("created_at")
    }
  },
  apiKey: {
    name: "api_keys",
    Class: ApiKey,
    columns: {
      id: text("id"),
      workspaceId: text("workspace_id"),
      name: text("name"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      revokedAt: instant("revoked_at")
    }
  },
  grant: {
    name: "oauth_grants",
    Class: OAuthGrant,
    columns: {
      id: text("id"),
      workspaceIds: json("workspace_ids"),
      appName: text("app_name"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      revokedAt: instant("revoked_at"),
      clientId: text("client_id"),
      userId: text("user_id")
    }
  },
  oauthClient: {
    name: "oauth_clients",
    Class: OAuthClient,
    columns: {
      id: text("id"),
      name: text("name"),
      redirectUris: json("redirect_uris"),
      secretHash: text("secret_hash"),
      createdAt: instant("created_at"),
      revokedAt: instant("revoked_at")
    }
  },
  authorizationCode: {
    name: "oauth_codes",
    Class: AuthorizationCode,
    columns: {
      id: text("id"),
      codeHash: text("code_hash"),
      clientId: text("client_id"),
      userId: text("user_id"),
      redirectUri: text("redirect_uri"),
      codeChallenge: text("code_challenge"),
      workspaceIds: json("workspace_ids"),
      createdAt: instant("created_at"),
      expiresAt: instant("expires_at"),
      usedAt: instant("used_at"),
      grantId: text("grant_id")
    }
  },
  oauthToken: {
    name: "oauth_tokens",
    Class: OAuthToken,
    columns: {
      id: text("id"),
      tokenHash: text("token_hash"),
      kind: text("kind"),
      grantId: text("grant_id"),
      createdAt: instant("created_at"),
      expiresAt: instant("expires_at"),
      usedAt: instant("used_at"),
      revokedAt: instant("revoked_at")
    }
  },
  experiment: {
    name: "experiments",
    Class: Experiment,
    columns: {
      id: text("id"),
      projectId: text("project_id"),
      programId: text("program_id"),
      holdoutPercent: number("holdout_percent"),
      startedAt: instant("started_at"),
      endedAt: instant("ended_at")
    }
  },
  user: {
    name: "users",
    Class: User,
    columns: {
      id: text("id"),
      email: text("email"),
      emailKey: text("email_key"),
      name: text("name"),
      memberships: json("memberships"),
      passwordHash: text("password_hash"),
      failedSignIns: json<ReadonlyArray<Date>>(
        "failed_sign_ins",
        (list: ReadonlyArray<string>) => list.map((d) => new Date(d))
      ),
      createdAt: instant("created_at")
    }
  },
  session: {
    name: "sessions",
    Class: Session,
    columns: {
      id: text("id"),
      userId: text("user_id"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      lastSeenAt: instant("last_seen_at"),
      expiresAt: instant("expires_at")
    }
  },
  invite: {
    name: "invites",
    Class: Invite,
    columns: {
      id: text("id"),
      userId: text("user_id"),
      tokenHash: text("token_hash"),
      createdAt: instant("created_at"),
      expiresAt: instant("expires_at"),
      usedAt: instant("used_at")
    }
  }
}

const byId = Order.mapInput(Order.string, (record: { readonly id: string }) => record.id)

export const makeCatalog = (sql: SqlClient.SqlClient): Catalog["Type"] => {
  // Every field named must match: a value by `=`, an array by `IN` (empty: nothing), `null` by `IS NULL`.
  const where = (columns: Record<string, Column<any>>, selection: object) =>
    sql.and(
      Object.entries(selection).flatMap(([field, wanted]) => {
        const column = columns[field]!
        const stored = (value: unknown) => column.encode(value)[column.name]
        if (wanted === undefined) return []
        if (wanted === null) return [sql`${sql(column.name)} IS NULL`]
        if (Array.isArray(wanted)) return [sql.in(column.name, wanted.map(stored))]
        return [sql`${sql(column.name)} = ${stored(wanted)}`]
      })
    )

  // RETURNING gives rows in no promised order; the port answers records by id.
  const records = <A extends { readonly id: string }>(table: Table<A>) => (rows: ReadonlyArray<Row>) =>
    Arr.sort(rows.map(decode(table)), byId)

  return {
    // Every uniqueness rule is a constraint of the schema: primary keys, `site_key UNIQUE`, the
    // partial unique index `experiments_running`.
    insert: (kind, record) => {
      const table = tables[kind]
      return insertNew(sql, table.name, encode(table, record)).pipe(port(sql, `Catalog.insert(${kind})`))
    },

    find: (kind, selection) => {
      const table = tables[kind]
      return sql`SELECT * FROM ${sql(table.name)} WHERE ${where(table.columns, selection)} ORDER BY id`.pipe(
        Effect.map(records(table)),
        port(sql, `Catalog.find(${kind})`)
      )
    },

    // One UPDATE matches and changes each record: of concurrent updates, one whose selection no
    // longer matches changes nothing.
    update: (kind, selection, changes) => {
      const table = tables[kind]
      const set = encode(table, changes as Partial<CatalogRecords[typeof kind]>)
      return (Object.keys(set).length === 0
        ? sql`SELECT * FROM ${sql(table.name)} WHERE ${where(table.columns, selection)}`
        : sql`UPDATE ${sql(table.name)} SET ${sql.update(set)} WHERE ${where(table.columns, selection)} RETURNING *`)
        .pipe(Effect.map(records(table)), port(sql, `Catalog.update(${kind})`))
    },

    remove: (kind, selection) => {
      const table = tables[kind]
      return sql`DELETE FROM ${sql(table.name)} WHERE ${where(table.columns, selection)} RETURNING *`.pipe(
        Effect.map(records(table)),
        port(sql, `Catalog.remove(${kind})`)
      )
    }
  }
}
