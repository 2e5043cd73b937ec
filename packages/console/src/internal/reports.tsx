/** A program's Overview, Events and Insights: the report routes of the API as charts over a date range. */
import { useState } from "preact/hooks"
import { id, withQuery } from "./api.js"
import { Bars, Days } from "./charts.js"
import { defaultRange, Empty, Loaded, type Paused, PausedNotice, type Range, RangeForm, useResource } from "./ui.js"

type Report<A> = Paused | ({ readonly paused: false; readonly range: Range } & A)

interface OverviewData {
  readonly activeStreakers: number
  readonly countedActions: number
  readonly streakLengths: ReadonlyArray<{ readonly length: string; readonly members: number }>
}
interface EventsData {
  readonly days: ReadonlyArray<
    { readonly date: string; readonly eventType: string; readonly count: number; readonly counted: number }
  >
}
interface InsightsData {
  readonly sources: ReadonlyArray<{
    readonly source: string | null
    readonly externalService: string | null
    readonly integrationId: string | null
    readonly count: number
  }>
}

function useReport<A>(name: string, programId: string, range: Range) {
  return useResource<Report<A>>(withQuery(`/v1/api/reports/${name}`, { programId, from: range.from, to: range.to }))
}

/** One report over a range the user picks; a paused answer says why and what to do. */
function ReportSection<A>(props: {
  readonly name: string
  readonly programId: string
  readonly children: (data: { readonly paused: false; readonly range: Range } & A) => preact.ComponentChildren
}) {
  const [range, setRange] = useState<Range>(defaultRange())
  const [report] = useReport<A>(props.name, props.programId, range)
  return (
    <>
      <RangeForm range={range} onChange={setRange} />
      <Loaded resource={report} label={`the ${props.name} report`}>
        {(data) => data.paused ? <PausedNotice paused={data} /> : props.children(data)}
      </Loaded>
    </>
  )
}

export const Overview = (props: { readonly programId: string }) => (
  <ReportSection<OverviewData> name="overview" programId={props.programId}>
    {(data) => (
      <>
        <dl class="figures">
          <div>
            <dt>Active streakers</dt>
            <dd>{data.activeStreakers}</dd>
          </div>
          <div>
            <dt>Counted actions</dt>
            <dd>{data.countedActions}</dd>
          </div>
        </dl>
        <h2>Live streaks by current length</h2>
        <Bars
          title="Members by current streak length"
          bars={data.streakLengths.map((s) => ({
            label: `${s.length} ${s.length === "1" ? "day" : "days"}`,
            value: s.members
          }))}
        />
      </>
    )}
  </ReportSection>
)

export const Events = (props: { readonly programId: string }) => (
  <ReportSection<EventsData> name="events" programId={props.programId}>
    {(data) => {
      const perDay = new Map<string, number>()
      for (const d of data.days) {
        perDay.set(d.date, (perDay.get(d.date) ?? 0) + d.count)
      }
      return (
        <>
          <h2>Live actions per day</h2>
          <Days title="Live actions per day" from={data.range.from} to={data.range.to} values={perDay} />
          {data.days.length === 0 ?
            <Empty>No live action in this range.</Empty> :
            (
              <div class="table" tabIndex={0} role="region" aria-label="Actions per day and event type">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Date</th>
                      <th scope="col">Event type</th>
                      <th scope="col">Actions</th>
                      <th scope="col">Counted</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.days.map((d) => (
                      <tr key={`${d.date}-${d.eventType}`}>
                        <td>{d.date}</td>
                        <td>{d.eventType}</td>
                        <td>{d.count}</td>
                        <td>{d.counted}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </>
      )
    }}
  </ReportSection>
)

export const Insights = (props: { readonly programId: string }) => (
  <ReportSection<InsightsData> name="insights" programId={props.programId}>
    {(data) =>
      data.sources.length === 0 ? <Empty>No counted action in this range.</Empty> : (
        <>
          <h2>Counted actions by source</h2>
          <Bars
            title="Counted actions by source"
            bars={data.sources.map((s) => ({
              label: [s.source ?? "unlabelled", s.externalService].filter((x) => x !== null).join(" · "),
              value: s.count
            }))}
          />
          <div class="table" tabIndex={0} role="region" aria-label="Counted actions by source">
            <table>
              <thead>
                <tr>
                  <th scope="col">Source</th>
                  <th scope="col">Service</th>
                  <th scope="col">Integration</th>
                  <th scope="col">Counted actions</th>
                </tr>
              </thead>
              <tbody>
                {data.sources.map((s, i) => (
                  <tr key={i}>
                    <td>{s.source ?? "—"}</td>
                    <td>{s.externalService ?? "—"}</td>
                    <td>{s.integrationId ?? "—"}</td>
                    <td>{s.count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
  </ReportSection>
)

export const programPath = (programId: string, section: string) => `/console/programs/${id(programId)}/${section}`
