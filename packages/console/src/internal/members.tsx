/** Members: look one up by `userHash`, read their state and ledger (as a calendar), grant freezes. */
import { useState } from "preact/hooks"
import { del, id, post, withQuery } from "./api.js"
import { Empty, ErrorNotice, Loaded, useAction, useResource, utcDate } from "./ui.js"

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
  paused: "Paused",
  forgiven: "Forgiven"
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

interface Pause {
  readonly id: string
  readonly start: string
  readonly end: string
}

/** Repair a missed period (within the policy's repair window) and pause a member's streak for a while. */
const Forgiveness = (
  props: { readonly base: string; readonly canWrite: boolean; readonly onChange: () => void }
) => {
  const [period, setPeriod] = useState(utcDate(1))
  const [reason, setReason] = useState("")
  const [repaired, setRepaired] = useState(false)
  const repair = useAction(() => post(`${props.base}/repairs`, { period, reason }))
  const [pauses, reloadPauses] = useResource<{ pauses: ReadonlyArray<Pause> }>(`${props.base}/pauses`)
  const [start, setStart] = useState(utcDate(-7))
  const [end, setEnd] = useState(utcDate(-13))
  const pause = useAction(() => post(`${props.base}/pauses`, { start, end }))
  const unpause = useAction((pauseId: string) => del(`${props.base}/pauses/${id(pauseId)}`))
  return (
    <>
      <h2>Repair a missed period</h2>
      <form
        class="inline"
        aria-label="Repair a missed period"
        onSubmit={async (event) => {
          event.preventDefault()
          setRepaired(false)
          if ((await repair.act()) !== undefined) {
            setRepaired(true)
            props.onChange()
          }
        }}
      >
        <label>
          Day of the period{" "}
          <input type="date" value={period} onInput={(e) => setPeriod(e.currentTarget.value)} required />
        </label>
        <label>
          Reason <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} required maxLength={500} />
        </label>
        <button type="submit" disabled={repair.busy || !props.canWrite}>Repair</button>
      </form>
      <ErrorNotice error={repair.error} />
      <p role="status">{repaired ? "Repaired: the period counts as kept." : ""}</p>
      <h2>Pauses</h2>
      <Loaded resource={pauses} label="pauses">
        {(data) =>
          data.pauses.length === 0 ? <Empty>No pause.</Empty> : (
            <ul class="cards">
              {data.pauses.map((p) => (
                <li key={p.id} class="card row spread">
                  <span id={`pause-${p.id}`}>{p.start} to {p.end}</span>
                  <button
                    type="button"
                    class="danger"
                    aria-describedby={`pause-${p.id}`}
                    disabled={unpause.busy || !props.canWrite}
                    onClick={async () => {
                      if ((await unpause.act(p.id)) !== undefined) {
                        reloadPauses()
                        props.onChange()
                      }
                    }}
                  >
                    Remove
                  </button>
                </li>
              ))}
            </ul>
          )}
      </Loaded>
      <ErrorNotice error={unpause.error} />
      <form
        class="inline"
        aria-label="Pause the streak"
        onSubmit={async (event) => {
          event.preventDefault()
          if ((await pause.act()) !== undefined) {
            reloadPauses()
            props.onChange()
          }
        }}
      >
        <label>
          First day <input type="date" value={start} onInput={(e) => setStart(e.currentTarget.value)} required />
        </label>
        <label>
          Last day <input type="date" value={end} onInput={(e) => setEnd(e.currentTarget.value)} required />
        </label>
        <button type="submit" disabled={pause.busy || !props.canWrite}>Pause</button>
      </form>
      <ErrorNotice error={pause.error} />
    </>
  )
}

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
      <Forgiveness
        base={base}
        canWrite={props.canWrite}
        onChange={() => {
          reloadMember()
          reloadLedger()
        }}
      />
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
