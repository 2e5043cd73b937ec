/**
 * The search Find Member Streak: a member's current and best streak in a program
 * (`GET /v1/api/programs/{id}/members/{userHash}`). A member never seen has zeros, so the search
 * always finds one record.
 */
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Programs from "./Programs.js"
import * as Server from "./Server.js"

interface MemberStreak {
  readonly programId: string
  readonly userHash: string
  readonly current: number
  readonly best: number
  readonly todayDone: boolean
  readonly pending: boolean
  readonly lastActiveDate: string | null
  readonly isLive: boolean
}

export const perform = async (z: ZObject, bundle: Bundle) => {
  const programId = encodeURIComponent(String(bundle.inputData.programId ?? ""))
  const userHash = encodeURIComponent(String(bundle.inputData.userHash ?? ""))
  const response = await z.request<MemberStreak>({
    url: Server.apiUrl(bundle, `/programs/${programId}/members/${userHash}`),
    method: "GET"
  })
  // Zapier needs an `id` per record: the member within the program.
  return [{ id: `${response.data.programId}:${response.data.userHash}`, ...response.data }]
}

export const search = {
  key: "findMemberStreak",
  noun: "Member Streak",
  display: {
    label: "Find Member Streak",
    description: "Looks up a member's current and best streak in a program, and whether today is done."
  },
  operation: {
    inputFields: [
      Programs.field("The program to look in."),
      {
        key: "userHash",
        label: "Member ID",
        required: true,
        helpText: "The member's stable, opaque ID (the `userHash`) as your systems send it when recording actions."
      }
    ],
    perform,
    sample: {
      id: "prg_06eeqbmgm1r2ngy4xcbggwa5nr:member-42",
      programId: "prg_06eeqbmgm1r2ngy4xcbggwa5nr",
      userHash: "member-42",
      current: 7,
      best: 12,
      todayDone: true,
      pending: false,
      lastActiveDate: "2026-03-14",
      isLive: true
    },
    outputFields: [
      { key: "id", label: "ID" },
      { key: "programId", label: "Program ID" },
      { key: "userHash", label: "Member ID (userHash)" },
      { key: "current", label: "Current Streak", type: "integer" as const },
      { key: "best", label: "Best Streak", type: "integer" as const },
      { key: "todayDone", label: "Today Done", type: "boolean" as const },
      { key: "pending", label: "Pending (alive, today still owed)", type: "boolean" as const },
      { key: "lastActiveDate", label: "Last Active Day (YYYY-MM-DD)" },
      { key: "isLive", label: "Program Is Live", type: "boolean" as const }
    ]
  }
}
