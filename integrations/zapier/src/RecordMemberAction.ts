/**
 * The action Record Member Action: counts one action of a member for a program through the
 * customer REST door (`POST /v1/api/programs/{id}/events`), with the same streak rules,
 * idempotency and milestones as every other door.
 */
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Programs from "./Programs.js"
import * as Server from "./Server.js"

/** Zapier hands booleans over as booleans or as text ("true", "yes"), depending on the editor. */
export const isTrue = (value: unknown): boolean =>
  value === true || (typeof value === "string" && ["true", "yes", "1"].includes(value.trim().toLowerCase()))

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value.trim() : undefined

export interface Counted {
  readonly counted: boolean
  readonly duplicate?: boolean
  readonly reason?: string
}

export const perform = async (z: ZObject, bundle: Bundle) => {
  const input = bundle.inputData
  const programId = String(input.programId ?? "")
  const ts = text(input.ts)
  const tz = text(input.tz)
  const idempotencyKey = text(input.idempotencyKey)
  const zapId = (bundle.meta as { zap?: { id?: unknown } } | undefined)?.zap?.id
  const body = {
    userHash: String(input.userHash ?? ""),
    ...(ts !== undefined ? { ts } : {}),
    ...(tz !== undefined ? { tz } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
    ...(isTrue(input.test) ? { test: true } : {}),
    externalService: "zapier",
    ...(zapId !== undefined && zapId !== null ? { integrationId: `zap-${String(zapId)}` } : {})
  }
  const response = await z.request<Counted>({
    url: Server.apiUrl(bundle, `/programs/${encodeURIComponent(programId)}/events`),
    method: "POST",
    body
  })
  return {
    programId,
    userHash: body.userHash,
    counted: response.data.counted,
    duplicate: response.data.duplicate === true,
    ...(response.data.reason !== undefined ? { reason: response.data.reason } : {})
  }
}

export const create = {
  key: "recordMemberAction",
  noun: "Member Action",
  display: {
    label: "Record Member Action",
    description: "Counts one action of a member toward their streak in a program (at most one per day counts)."
  },
  operation: {
    inputFields: [
      Programs.field("The program that counts this action."),
      {
        key: "userHash",
        label: "Member ID",
        required: true,
        helpText: "The member's stable, opaque ID (the `userHash`): a hash of their e-mail or your internal user " +
          "ID. Raw e-mail addresses are refused."
      },
      {
        key: "ts",
        label: "When",
        type: "datetime" as const,
        required: false,
        helpText: "When the member acted. Leave empty for now. Times more than 5 minutes in the future are refused."
      },
      {
        key: "tz",
        label: "Member Time Zone",
        required: false,
        helpText: "The member's IANA time zone (for example `Europe/Paris`), which decides the local day the action " +
          "counts for. Leave empty to use the member's stored zone or the project's."
      },
      {
        key: "idempotencyKey",
        label: "Idempotency Key",
        required: false,
        helpText: "A value unique to this action, for example the ID of the trigger's record. A repeat with the " +
          "same key within 24 hours counts once and gets the first answer, so a replayed Zap step does not count twice."
      },
      {
        key: "test",
        label: "Test Action",
        type: "boolean" as const,
        required: false,
        default: "false",
        helpText: "Yes: count it on the program's test ledger, which fires no events and never makes the program " +
          "live. Use it while building the Zap."
      }
    ],
    perform,
    sample: {
      programId: "prg_06eeqbmgm1r2ngy4xcbggwa5nr",
      userHash: "member-42",
      counted: true,
      duplicate: false
    },
    outputFields: [
      { key: "programId", label: "Program ID" },
      { key: "userHash", label: "Member ID (userHash)" },
      { key: "counted", label: "Counted", type: "boolean" as const },
      { key: "duplicate", label: "Duplicate (already counted)", type: "boolean" as const },
      { key: "reason", label: "Reason Not Counted" }
    ]
  }
}
