/** Members: look one up by `userHash`, read their state and ledger (as a calendar), grant freezes. */
import { useState } from "preact/hooks"
import { id, post, withQuery } from "./api.js"
import { ErrorNotice, Loaded, useAction, useResource, utcDate } from "./ui.js"

interface Member {
  readonly userHash: string
  readonly current: number
  readonly best: number
  readonly todayDone: boolean
  readonly pending: boolean
  readonly lastActiveDate: string | null
  readonly isLive: boolean
  readonly mode?: string
  readonly freezes?: number
}

interface Period {
  readonly start: string
  readonly end: string
  readonly status: string
  readonly activeDays: number
  readonly target: number
}

interface Ledger {
  readonly policy: { readonly cadence: string }
  readonly current: number
  readonly best: number
  readonly freezes: number
  readonly periods: ReadonlyArray<Period>
}

const statusText: Record<string, string> = {
  kept: "Kept",
  missed: "Missed",
  frozen: "Frozen",
  rest: "Rest day",
  current: "Current",
  repaired: "Repaired",
  paused: "Paused"
}

const DAY = 86_400_000
const dayOf = (date: string) => Date.parse(`${date}T00:00:00Z`)
const iso = (t: number) => new Date(t).toISOString().slice(0, 10)

/** A daily ledger as weeks (Monday first) of days, each day with its period's status. */
const DayCalendar = (props: { readonly periods: ReadonlyArray<Period> }) => {
  const byDay = new Map<string, Period>()
  for (const p of props.periods) for (let t = dayOf(p.start); t <= dayOf(p.end); t += DAY) byDay.set(iso(t), p)
  const first = dayOf(props.periods[0]!.start)
  const last = dayOf(props.periods[props.periods.length - 1]!.end)
  const monday = first - ((new Date(first).getUTCDay() + 6) % 7) * DAY
  const weeks: Array<Array<string>> = []
  for (let t = monday; t <= last; t += 7 * DAY) weeks.push([0, 1, 2, 3, 4, 5, 6].map((d) => iso(t + d * DAY)))
  return (
    <table class="calendar">
      <caption>Ledger, day by day</caption>
      <thead>
        <tr>
          {["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map((d) => <th scope="col" key={d}>{d}</th>)}
        </tr>
      </thead>
      <tbody>
        {weeks.map((week) => (
          <tr key={week[0]}>
            {week.map((day) => {
              const period = byDay.get(day)
              return (
                <td key={day} class={period === undefined ? "outside" : `status-${period.status}`}>
                  <span class="day">{day.slice(8)}</span>
                  <span class="status">{period === undefined ? "" : statusText[period.status] ?? period.status}</span>
                  <span class="visually-hidden">{day}</span>
                </td>
              )
            })}
          </tr>
        ))}
      </tbody>
    </table>
  )
}

/** A weekly or monthly ledger: one cell per period. */
const PeriodCalendar = (props: { readonly periods: ReadonlyArray<Period> }) => (
  <table class="calendar periods">
    <caption>Ledger, period by period</caption>
    <thead>
      <tr>
        <th scope="col">Period</th>
        <th scope="col">Status</th>
        <th scope="col">Active days</th>
      </tr>
    </thead>
    <tbody>
      {props.periods.map((p) => (
        <tr key={p.start} class={`status-${p.status}`}>
          <td>{p.start} – {p.end}</td>
          <td class="status">{statusText[p.status] ?? p.status}</td>
          <td>{p.activeDays} of {p.target}</td>
        </tr>
      ))}
    </tbody>
  </table>
)

const MemberView = (props: { readonly programId: string; readonly userHash: string; readonly canWrite: boolean }) => {
  const base = `/v1/api/programs/${id(props.programId)}/members/${id(props.userHash)}`
  const [member, reloadMember] = useResource<Member>(base)
  const [ledger, reloadLedger] = useResource<Ledger>(withQuery(`${base}/ledger`, { from: utcDate(55), to: utcDate(0) }))
  const [count, setCount] = useState("1")
  const [granted, setGranted] = useState<number | undefined>(undefined)
  const grant = useAction(() => post<{ freezes: number }>(`${base}/freezes`, { count: Number(count) }))
  return (
    <>
      <Loaded resource={member} label="the member">
        {(m) => (
          <dl class="figures">
            <div>
              <dt>Current streak</dt>
              <dd>{m.current}</dd>
            </div>
            <div>
              <dt>Best streak</dt>
              <dd>{m.best}</dd>
            </div>
            <div>
              <dt>Done this period</dt>
              <dd>{m.todayDone ? "Yes" : "No"}</dd>
            </div>
            <div>
              <dt>Last active</dt>
              <dd>{m.lastActiveDate ?? "never"}</dd>
            </div>
            {m.freezes !== undefined
              ? (
                <div>
                  <dt>Freezes</dt>
                  <dd>{m.freezes}</dd>
                </div>
              )
              : null}
          </dl>
        )}
      </Loaded>
      <Loaded resource={ledger} label="the ledger">
        {(l) =>
          l.periods.length === 0 ? <p class="empty">No period yet.</p> : l.policy.cadence === "daily"
            ? <DayCalendar periods={l.periods} />
            : <PeriodCalendar periods={l.periods} />}
      </Loaded>
      <form
        class="inline"
        aria-label="Grant freezes"
        onSubmit={async (event) => {
          event.preventDefault()
          const answer = await grant.act()
          if (answer !== undefined) {
            setGranted(answer.value.freezes)
            reloadMember()
            reloadLedger()
          }
        }}
      >
        <label>
          Freezes to grant{" "}
          <input inputMode="numeric" value={count} onInput={(e) => setCount(e.currentTarget.value)} size={3} />
        </label>
        <button type="submit" disabled={grant.busy || !props.canWrite}>Grant freeze</button>
        <ErrorNotice error={grant.error} />
        <p role="status">{granted !== undefined ? `Granted: the member now holds ${granted} freezes.` : ""}</p>
      </form>
    </>
  )
}

export const Members = (
  props: { readonly programId: string; readonly canWrite: boolean; readonly initial?: string }
) => {
  const [text, setText] = useState(props.initial ?? "")
  const [userHash, setUserHash] = useState<string | undefined>(props.initial)
  return (
    <>
      <form
        class="inline"
        role="search"
        aria-label="Look a member up"
        onSubmit={(event) => {
          event.preventDefault()
          if (text.trim() !== "") setUserHash(text.trim())
        }}
      >
        <label>
          Member (userHash){" "}
          <input name="userHash" value={text} onInput={(e) => setText(e.currentTarget.value)} required />
        </label>
        <button type="submit">Look up</button>
      </form>
      {userHash === undefined
        ? <p class="empty">Enter a member's userHash to see their streak and ledger.</p>
        : <MemberView key={userHash} programId={props.programId} userHash={userHash} canWrite={props.canWrite} />}
    </>
  )
}
