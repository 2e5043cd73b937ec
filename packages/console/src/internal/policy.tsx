/**
 * The policy editor: the program's whole streak policy as a form, saved with
 * `PUT /v1/api/programs/{id}/policy`. The server judges every value; a refusal names the field,
 * whose message is shown beside it and which gets the focus.
 */
import { useState } from "preact/hooks"
import { type ApiError, id, post, put } from "./api.js"
import { type Bar, Bars } from "./charts.js"
import { ErrorNotice, useAction } from "./ui.js"

export interface Policy {
  readonly cadence: "daily" | "weekly" | "monthly"
  readonly target: number
  readonly dayStartHour: number
  readonly restDays: ReadonlyArray<number>
  readonly freezes: { readonly initial: number; readonly max: number; readonly earnEvery: number }
  readonly atRiskHour: number
  /** Present where the server has repairs (docs/api.md#streak-policies). */
  readonly repairWindowDays?: number
  readonly repairsPer30Days?: number
}

/** What a policy makes of the program's history (`POST …/simulations`). */
interface Outcome {
  readonly members: number
  readonly alive: number
  readonly broken: number
  readonly freezesUsed: number
  readonly milestonesAchieved: number
  /** Members by their streak's length at the end of the replay, ascending. */
  readonly lengthHistogram: ReadonlyArray<{ readonly length: number; readonly members: number }>
}

const outcomeRows: ReadonlyArray<readonly [Exclude<keyof Outcome, "lengthHistogram">, string]> = [
  ["alive", "Members with a streak alive"],
  ["broken", "Streaks broken"],
  ["freezesUsed", "Freezes used"],
  ["milestonesAchieved", "Milestones reached"]
]

/** Lengths one by one up to 14, the longer ones together: the two histograms stay comparable. */
const lengthBars = (histogram: Outcome["lengthHistogram"]): ReadonlyArray<Bar> => {
  const longest = 15
  const bars = Array.from({ length: longest }, (_, length) => ({ label: String(length), value: 0 }))
  const longer = { label: `${longest}+`, value: 0 }
  for (const { length, members } of histogram) {
    if (length < longest) bars[length] = { label: String(length), value: members }
    else longer.value += members
  }
  const last = Math.max(0, ...histogram.filter((h) => h.length < longest).map((h) => h.length))
  return [...bars.slice(0, last + 1), ...(longer.value > 0 ? [longer] : [])]
}

const weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

// The number fields as the form holds them: text, sent as typed (the server says what is wrong).
interface Draft {
  cadence: string
  target: string
  dayStartHour: string
  restDays: Array<number>
  initial: string
  max: string
  earnEvery: string
  atRiskHour: string
  repairWindowDays: string | undefined
  repairsPer30Days: string | undefined
}

const draftOf = (p: Policy): Draft => ({
  cadence: p.cadence,
  target: String(p.target),
  dayStartHour: String(p.dayStartHour),
  restDays: [...p.restDays],
  initial: String(p.freezes.initial),
  max: String(p.freezes.max),
  earnEvery: String(p.freezes.earnEvery),
  atRiskHour: String(p.atRiskHour),
  repairWindowDays: p.repairWindowDays === undefined ? undefined : String(p.repairWindowDays),
  repairsPer30Days: p.repairsPer30Days === undefined ? undefined : String(p.repairsPer30Days)
})

const number = (
  text: string
): number | string => (text.trim() !== "" && Number.isFinite(Number(text)) ? Number(text) : text)

const bodyOf = (d: Draft) => ({
  cadence: d.cadence,
  target: number(d.target),
  dayStartHour: number(d.dayStartHour),
  restDays: d.restDays,
  freezes: { initial: number(d.initial), max: number(d.max), earnEvery: number(d.earnEvery) },
  atRiskHour: number(d.atRiskHour),
  ...(d.repairWindowDays === undefined ? {} : { repairWindowDays: number(d.repairWindowDays) }),
  ...(d.repairsPer30Days === undefined ? {} : { repairsPer30Days: number(d.repairsPer30Days) })
})

// The API names a field by its path in the policy; the form's ids follow it.
const fieldIds: Record<string, string> = {
  cadence: "policy-cadence",
  target: "policy-target",
  dayStartHour: "policy-dayStartHour",
  restDays: "policy-restDays",
  "freezes.initial": "policy-initial",
  "freezes.max": "policy-max",
  "freezes.earnEvery": "policy-earnEvery",
  freezes: "policy-initial",
  atRiskHour: "policy-atRiskHour",
  repairWindowDays: "policy-repairWindowDays",
  repairsPer30Days: "policy-repairsPer30Days"
}

const NumberField = (props: {
  readonly field: string
  readonly label: string
  readonly hint: string
  readonly value: string
  readonly error: ApiError | undefined
  readonly onInput: (value: string) => void
}) => {
  const fieldId = fieldIds[props.field]!
  const wrong = props.error?.field === props.field
  return (
    <div class="field">
      <label for={fieldId}>{props.label}</label>
      <input
        id={fieldId}
        inputMode="numeric"
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        aria-invalid={wrong ? "true" : undefined}
        aria-describedby={`${fieldId}-hint${wrong ? ` ${fieldId}-error` : ""}`}
      />
      <p class="hint" id={`${fieldId}-hint`}>{props.hint}</p>
      {wrong ? <p class="field-error" id={`${fieldId}-error`}>{props.error!.message}</p> : null}
    </div>
  )
}

export const PolicyEditor = (
  props: {
    readonly programId: string
    readonly policy: Policy
    readonly canWrite: boolean
    readonly onSaved: () => void
  }
) => {
  const [draft, setDraft] = useState<Draft>(draftOf(props.policy))
  const [saved, setSaved] = useState(false)
  const save = useAction((body: unknown) => put(`/v1/api/programs/${id(props.programId)}/policy`, body))
  const simulate = useAction((body: unknown) =>
    post<{ actual: Outcome; proposed: Outcome }>(`/v1/api/programs/${id(props.programId)}/simulations`, {
      policy: body
    })
  )
  const [outcome, setOutcome] = useState<{ actual: Outcome; proposed: Outcome } | undefined>(undefined)
  const set = (patch: Partial<Draft>) => {
    setSaved(false)
    setDraft({ ...draft, ...patch })
  }
  const error = save.error
  const fieldError = error?.field !== undefined && fieldIds[error.field] !== undefined
  const field = (name: string, label: string, hint: string, key: keyof Draft) => (
    <NumberField
      field={name}
      label={label}
      hint={hint}
      value={draft[key] as string}
      error={error}
      onInput={(value) => set({ [key]: value } as Partial<Draft>)}
    />
  )
  const submit = async (event: Event) => {
    event.preventDefault()
    setSaved(false)
    const answer = await save.act(bodyOf(draft))
    if (answer !== undefined) {
      setSaved(true)
      props.onSaved()
    } else {
      // The focus goes to the field the server refused, so its message is read out.
      requestAnimationFrame(() => {
        const wrong = document.querySelector<HTMLElement>("[aria-invalid=true]")
        wrong?.focus()
      })
    }
  }
  const restWrong = error?.field === "restDays"
  return (
    <form class="policy" onSubmit={submit} noValidate aria-label="Streak policy">
      <div class="field">
        <label for="policy-cadence">Cadence</label>
        <select
          id="policy-cadence"
          value={draft.cadence}
          onChange={(e) => set({ cadence: e.currentTarget.value })}
          aria-describedby="policy-cadence-hint"
        >
          <option value="daily">Daily</option>
          <option value="weekly">Weekly (Monday to Sunday)</option>
          <option value="monthly">Monthly</option>
        </select>
        <p class="hint" id="policy-cadence-hint">The period a streak counts in.</p>
      </div>
      {field("target", "Target", "Active days a period needs: 1 for daily, 1–7 weekly, 1–28 monthly.", "target")}
      {field("dayStartHour", "Day start hour", "Local hour a member's day starts, 0–23.", "dayStartHour")}
      <fieldset
        id="policy-restDays"
        tabIndex={-1}
        aria-invalid={restWrong ? "true" : undefined}
        aria-describedby={`policy-restDays-hint${restWrong ? " policy-restDays-error" : ""}`}
      >
        <legend>Rest days</legend>
        <div class="weekdays">
          {weekdays.map((name, i) => (
            <label key={name} class="check">
              <input
                type="checkbox"
                checked={draft.restDays.includes(i + 1)}
                onChange={(e) =>
                  set({
                    restDays: e.currentTarget.checked
                      ? [...draft.restDays, i + 1].sort()
                      : draft.restDays.filter((d) => d !== i + 1)
                  })}
              />{" "}
              {name}
            </label>
          ))}
        </div>
        <p class="hint" id="policy-restDays-hint">Days that never break a streak (daily cadence only).</p>
        {restWrong ? <p class="field-error" id="policy-restDays-error">{error!.message}</p> : null}
      </fieldset>
      <fieldset>
        <legend>Freezes</legend>
        {field("freezes.initial", "Freezes to start with", "0 up to the most a member holds.", "initial")}
        {field("freezes.max", "Most freezes held", "0–10.", "max")}
        {field(
          "freezes.earnEvery",
          "Earn one every",
          "Streak length that earns a freeze, 0 (never)–1000.",
          "earnEvery"
        )}
      </fieldset>
      {field("atRiskHour", "At-risk hour", "Local hour from which streak.at_risk may fire, 0–23.", "atRiskHour")}
      {draft.repairWindowDays === undefined ? null : (
        <fieldset>
          <legend>Repairs</legend>
          {field(
            "repairWindowDays",
            "Repair window (days)",
            "Days after a missed period during which it may be repaired, 0 (no repairs)–365.",
            "repairWindowDays"
          )}
          {field(
            "repairsPer30Days",
            "Repairs per 30 days",
            "Repairs a member may have within 30 days, 0–10.",
            "repairsPer30Days"
          )}
        </fieldset>
      )}
      {error !== undefined && !fieldError ? <p class="notice error" role="alert">{error.message}</p> : null}
      {error !== undefined && fieldError
        ? <p class="notice error" role="alert">The policy was not saved: {error.message}</p>
        : null}
      <p role="status">{saved ? "Policy saved. Streaks are recomputed with it." : ""}</p>
      <div class="row">
        <button type="submit" disabled={save.busy || !props.canWrite}>Save policy</button>
        <button
          type="button"
          disabled={simulate.busy}
          onClick={async () => {
            setOutcome(undefined)
            const answer = await simulate.act(bodyOf(draft))
            if (answer !== undefined) setOutcome(answer.value)
          }}
        >
          Try on the history
        </button>
      </div>
      <ErrorNotice error={simulate.error} />
      {outcome === undefined ? null : (
        <table aria-label="The program's history under each policy">
          <thead>
            <tr>
              <th scope="col">Of {outcome.actual.members} members</th>
              <th scope="col">Current policy</th>
              <th scope="col">This policy</th>
            </tr>
          </thead>
          <tbody>
            {outcomeRows.map(([key, label]) => (
              <tr key={key}>
                <th scope="row">{label}</th>
                <td>{outcome.actual[key]}</td>
                <td>{outcome.proposed[key]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {outcome === undefined ? null : (
        <div class="pair">
          <figure>
            <figcaption>Streak lengths, current policy (members per length in days)</figcaption>
            <Bars title="Streak lengths under the current policy" bars={lengthBars(outcome.actual.lengthHistogram)} />
          </figure>
          <figure>
            <figcaption>Streak lengths, this policy (members per length in days)</figcaption>
            <Bars title="Streak lengths under this policy" bars={lengthBars(outcome.proposed.lengthHistogram)} />
          </figure>
        </div>
      )}
      {props.canWrite ? null : <p class="hint">Your role is viewer: you can read the policy, not change it.</p>}
    </form>
  )
}
