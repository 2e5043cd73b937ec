/**
 * Proof: start a holdout experiment, read its report (retention per group at each horizon, the
 * difference with its 95 % interval drawn, the sample-ratio check), and stop it.
 */
import { useState } from "preact/hooks"
import { id, post } from "./api.js"
import { Intervals } from "./charts.js"
import { dateTime, Empty, ErrorNotice, Loaded, percent, useAction, useResource } from "./ui.js"

interface Estimate {
  readonly estimate: number
  readonly lower: number
  readonly upper: number
}
interface Horizon {
  readonly horizon: number
  readonly control: { readonly n: number; readonly retained: number; readonly rate: number | null }
  readonly treatment: { readonly n: number; readonly retained: number; readonly rate: number | null }
  readonly difference: Estimate | null
  readonly pValue: number | null
  readonly mde: number | null
}
interface Experiment {
  readonly id: string
  readonly holdoutPercent: number
  readonly startedAt: string
  readonly endedAt?: string
  readonly control: { readonly members: number; readonly retained: number; readonly retention7d: number | null }
  readonly treatment: { readonly members: number; readonly retained: number; readonly retention7d: number | null }
  readonly report?: {
    readonly horizons: ReadonlyArray<Horizon>
    readonly srm: {
      readonly control: number
      readonly treatment: number
      readonly pValue: number | null
      readonly mismatch: boolean
    }
  }
}

const days = (n: number) => (n === 1 ? "1 day" : `${n} days`)

const points = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} pt`

const Report = (props: { readonly experiment: Experiment }) => {
  const e = props.experiment
  const horizons = e.report?.horizons ?? []
  const drawn = horizons.filter((h) => h.difference !== null)
  return (
    <>
      <dl class="figures">
        <div>
          <dt>Holdout</dt>
          <dd>{e.holdoutPercent} %</dd>
        </div>
        <div>
          <dt>Control members</dt>
          <dd>{e.control.members}</dd>
        </div>
        <div>
          <dt>Treatment members</dt>
          <dd>{e.treatment.members}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>{dateTime(e.startedAt)}</dd>
        </div>
        {e.endedAt !== undefined
          ? (
            <div>
              <dt>Ended</dt>
              <dd>{dateTime(e.endedAt)}</dd>
            </div>
          )
          : null}
      </dl>
      {e.report?.srm.mismatch === true
        ? (
          <p class="notice error" role="alert">
            The groups are not the size the holdout asks for (sample-ratio mismatch, p ={" "}
            {e.report.srm.pValue}): do not trust the numbers below.
          </p>
        )
        : null}
      <h3>Retention difference, treatment − control</h3>
      {drawn.length === 0
        ? <Empty>No horizon has matured members in both groups yet: the intervals appear as members mature.</Empty>
        : (
          <Intervals
            title="Retention difference per horizon with 95 % intervals"
            intervals={drawn.map((h) => ({ label: days(h.horizon), ...h.difference! }))}
            format={points}
          />
        )}
      {horizons.length === 0 ? null : (
        <div class="table" tabIndex={0} role="region" aria-label="Retention per horizon">
          <table>
            <thead>
              <tr>
                <th scope="col">Horizon</th>
                <th scope="col">Control retained</th>
                <th scope="col">Treatment retained</th>
                <th scope="col">Difference (95 % interval)</th>
                <th scope="col">p-value</th>
                <th scope="col">Detectable</th>
              </tr>
            </thead>
            <tbody>
              {horizons.map((h) => (
                <tr key={h.horizon}>
                  <td>{days(h.horizon)}</td>
                  <td>{h.control.retained} of {h.control.n} ({percent(h.control.rate)})</td>
                  <td>{h.treatment.retained} of {h.treatment.n} ({percent(h.treatment.rate)})</td>
                  <td>
                    {h.difference === null
                      ? "—"
                      : `${points(h.difference.estimate)} (${points(h.difference.lower)} to ${
                        points(h.difference.upper)
                      })`}
                  </td>
                  <td>{h.pValue === null ? "—" : h.pValue.toFixed(3)}</td>
                  <td>{h.mde === null ? "—" : points(h.mde)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  )
}

export const Proof = (props: { readonly programId: string; readonly canWrite: boolean }) => {
  const base = `/v1/api/programs/${id(props.programId)}/experiments`
  const [list, reload] = useResource<{ experiments: ReadonlyArray<Experiment> }>(base)
  const [holdout, setHoldout] = useState("10")
  const start = useAction(() => post(base, { holdoutPercent: Number(holdout) }))
  const stop = useAction(() => post(`${base}/current/stop`))
  return (
    <Loaded resource={list} label="experiments">
      {(data) => {
        const running = data.experiments.find((e) => e.endedAt === undefined)
        const ended = data.experiments.filter((e) => e.endedAt !== undefined)
        return (
          <>
            <section aria-labelledby="running-heading">
              <h2 id="running-heading">{running !== undefined ? "Running experiment" : "Start an experiment"}</h2>
              {running !== undefined
                ? (
                  <>
                    <Report experiment={running} />
                    <button
                      type="button"
                      class="danger"
                      disabled={stop.busy || !props.canWrite}
                      onClick={async () => {
                        if ((await stop.act()) !== undefined) reload()
                      }}
                    >
                      Stop experiment
                    </button>
                    <ErrorNotice error={stop.error} />
                  </>
                )
                : (
                  <>
                    <p>A holdout of members receives no outbound event; the report compares how many come back.</p>
                    <form
                      class="inline"
                      aria-label="Start an experiment"
                      onSubmit={async (event) => {
                        event.preventDefault()
                        if ((await start.act()) !== undefined) reload()
                      }}
                    >
                      <label>
                        Holdout percent{" "}
                        <input
                          inputMode="numeric"
                          value={holdout}
                          onInput={(e) => setHoldout(e.currentTarget.value)}
                          size={3}
                        />
                      </label>
                      <button type="submit" disabled={start.busy || !props.canWrite}>Start experiment</button>
                      <ErrorNotice error={start.error} />
                    </form>
                  </>
                )}
            </section>
            <section aria-labelledby="ended-heading">
              <h2 id="ended-heading">Ended experiments</h2>
              {ended.length === 0 ? <Empty>None yet.</Empty> : (
                ended.map((e) => (
                  <details key={e.id} class="card">
                    <summary>
                      {e.holdoutPercent} % holdout, {dateTime(e.startedAt)} to {dateTime(e.endedAt)}
                    </summary>
                    <Report experiment={e} />
                  </details>
                ))
              )}
            </section>
          </>
        )
      }}
    </Loaded>
  )
}
