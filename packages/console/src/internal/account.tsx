/** Usage (active streakers this month against the plan) and Audit (every write, newest first). */
import { useState } from "preact/hooks"
import { withQuery } from "./api.js"
import { dateTime, Empty, Loaded, useResource, utcDate } from "./ui.js"

interface Usage {
  readonly month: string
  readonly plan: string
  readonly limit: number
  readonly activeStreakers: number
  readonly overLimit: boolean
}

export const UsagePage = (
  props: { readonly workspaces: ReadonlyArray<{ readonly id: string; readonly name: string }> }
) => {
  const [month, setMonth] = useState(utcDate(0).slice(0, 7))
  const [workspaceId, setWorkspaceId] = useState(props.workspaces[0]?.id ?? "")
  const [shown, setShown] = useState({ month, workspaceId })
  const [usage] = useResource<Usage>(withQuery("/v1/api/usage", shown))
  return (
    <>
      <form
        class="inline"
        aria-label="Usage of"
        onSubmit={(event) => {
          event.preventDefault()
          setShown({ month, workspaceId })
        }}
      >
        {props.workspaces.length > 1
          ? (
            <label>
              Workspace{" "}
              <select value={workspaceId} onChange={(e) => setWorkspaceId(e.currentTarget.value)}>
                {props.workspaces.map((w) => <option key={w.id} value={w.id}>{w.name}</option>)}
              </select>
            </label>
          )
          : null}
        <label>
          Month <input type="month" value={month} onInput={(e) => setMonth(e.currentTarget.value)} required />
        </label>
        <button type="submit">Show</button>
      </form>
      <Loaded resource={usage} label="usage">
        {(u) => (
          <>
            <dl class="figures">
              <div>
                <dt>Active streakers</dt>
                <dd>{u.activeStreakers}</dd>
              </div>
              <div>
                <dt>Plan</dt>
                <dd>{u.plan}</dd>
              </div>
              <div>
                <dt>Included</dt>
                <dd>{u.limit}</dd>
              </div>
            </dl>
            <label for="usage-meter">Active streakers against the plan, {u.month}</label>
            <meter
              id="usage-meter"
              min={0}
              max={u.limit}
              high={u.limit * 0.9}
              optimum={0}
              value={Math.min(u.activeStreakers, u.limit)}
            >
              {u.activeStreakers} of {u.limit}
            </meter>
            {u.overLimit
              ? (
                <p class="notice paused" role="status">
                  Over the plan: reports are paused (counting goes on). Ask your operator to raise the plan.
                </p>
              )
              : <p>{u.limit - u.activeStreakers} more members can be active this month before reports pause.</p>}
          </>
        )}
      </Loaded>
    </>
  )
}

interface AuditEntry {
  readonly at: string
  readonly actor: { readonly kind: string; readonly id: string }
  readonly clientAddress?: string | null
  readonly action: string
  readonly target?: unknown
  readonly details?: unknown
}

const text = (value: unknown): string =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)

/** An entry's details as `key: value` pairs. */
const details = (value: unknown): string =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? Object.entries(value).map(([k, v]) => `${k}: ${text(v)}`).join("; ")
    : text(value)

export const AuditPage = () => {
  const [cursor, setCursor] = useState<string | undefined>(undefined)
  const [audit] = useResource<{ entries: ReadonlyArray<AuditEntry>; nextCursor?: string }>(
    withQuery("/v1/api/audit", { cursor })
  )

  return (
    <Loaded resource={audit} label="the audit log">
      {(data) => {
        const entries = data.entries
        const next = data.nextCursor
        return entries.length === 0 ? <Empty>Nothing recorded yet.</Empty> : (
          <>
            <div class="table" tabIndex={0} role="region" aria-label="Audit log">
              <table>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Who</th>
                    <th scope="col">Action</th>
                    <th scope="col">Target</th>
                    <th scope="col">From</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map((e, i) => (
                    <tr key={i}>
                      <td class="when">{dateTime(e.at)}</td>
                      <td>{e.actor.kind} {e.actor.id}</td>
                      <td>{e.action}</td>
                      <td>{text(e.target)}</td>
                      <td>{e.clientAddress ?? ""}</td>
                      <td class="details">{details(e.details)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {next !== undefined
              ? <button type="button" onClick={() => setCursor(next)}>Older entries</button>
              : null}
          </>
        )
      }}
    </Loaded>
  )
}
