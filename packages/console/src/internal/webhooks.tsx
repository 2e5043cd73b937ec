/**
 * Webhooks of a program: its subscriptions with their recent deliveries ("Redeliver" each), a form
 * to subscribe a URL, sample payloads per event type, and "Rotate webhook secret".
 */
import { useState } from "preact/hooks"
import { del, id, post, withQuery } from "./api.js"
import { dateTime, Empty, ErrorNotice, Loaded, ShownOnce, useAction, useResource } from "./ui.js"

export const eventTypes = [
  "streak.at_risk",
  "streak.broken",
  "milestone.achieved",
  "streak.freeze_used",
  "streak.freeze_earned"
]

interface Hook {
  readonly id: string
  readonly programId: string
  readonly url: string
  readonly eventTypes: ReadonlyArray<string>
  readonly createdAt: string
  readonly createdBy?: { readonly kind: string; readonly id: string }
}

interface Attempt {
  readonly attempt: number
  readonly at: string
  readonly statusCode: number | null
  readonly durationMs: number
  readonly error: string | null
}

interface Delivery {
  readonly messageId: string
  readonly type: string
  readonly status: "pending" | "delivered" | "failed"
  readonly createdAt: string
  readonly attempts: ReadonlyArray<Attempt>
}

const statusText = { pending: "Pending", delivered: "Delivered", failed: "Failed" } as const

const Deliveries = (props: { readonly hook: Hook; readonly canWrite: boolean }) => {
  const [deliveries, reload] = useResource<{ deliveries: ReadonlyArray<Delivery> }>(
    `/v1/api/hooks/${id(props.hook.id)}/deliveries`
  )
  const [done, setDone] = useState<string | undefined>(undefined)
  const [all, setAll] = useState(false)
  const redeliver = useAction((messageId: string) =>
    post(`/v1/api/hooks/${id(props.hook.id)}/deliveries/${id(messageId)}/redeliver`)
  )
  return (
    <Loaded resource={deliveries} label="deliveries">
      {(data) =>
        data.deliveries.length === 0 ? <Empty>No delivery yet.</Empty> : (
          <>
            <div class="table" tabIndex={0} role="region" aria-label={`Recent deliveries to ${props.hook.url}`}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Created</th>
                    <th scope="col">Status</th>
                    <th scope="col">Last attempt</th>
                    <th scope="col">Answer</th>
                    <th scope="col">Duration</th>
                    <th scope="col">Error</th>
                    <th scope="col">Action</th>
                  </tr>
                </thead>
                <tbody>
                  {(all ? data.deliveries : data.deliveries.slice(0, 10)).map((d) => {
                    const last = d.attempts[d.attempts.length - 1]
                    const rowId = `delivery-${d.messageId}`
                    return (
                      <tr key={d.messageId}>
                        <td id={rowId}>{d.type}</td>
                        <td>{dateTime(d.createdAt)}</td>
                        <td>
                          <span class={d.status === "delivered" ? "ok" : d.status === "failed" ? "failed" : ""}>
                            {statusText[d.status] ?? d.status}
                          </span>
                          {d.attempts.length > 1 ? ` (${d.attempts.length} attempts)` : ""}
                        </td>
                        <td>{last === undefined ? "—" : dateTime(last.at)}</td>
                        <td>
                          {last === undefined ?
                            "—" :
                            last.statusCode === null ?
                            "no answer" :
                            <span class={last.statusCode < 300 ? "ok" : "failed"}>{last.statusCode}</span>}
                        </td>
                        <td>{last === undefined ? "—" : `${Math.round(last.durationMs)} ms`}</td>
                        <td>{last?.error ?? ""}</td>
                        <td>
                          <button
                            type="button"
                            aria-describedby={rowId}
                            disabled={redeliver.busy || !props.canWrite}
                            onClick={async () => {
                              setDone(undefined)
                              if ((await redeliver.act(d.messageId)) !== undefined) {
                                setDone(d.messageId)
                                reload()
                              }
                            }}
                          >
                            Redeliver
                          </button>
                        </td>
                      </tr>
                    )
                  })}
                </tbody>
              </table>
            </div>
            {!all && data.deliveries.length > 10
              ? (
                <button type="button" onClick={() => setAll(true)}>
                  Show all {data.deliveries.length} deliveries
                </button>
              )
              : null}
            <ErrorNotice error={redeliver.error} />
            <p role="status">{done !== undefined ? "Queued for delivery again." : ""}</p>
          </>
        )}
    </Loaded>
  )
}

const Subscribe = (
  props: { readonly programId: string; readonly onCreated: () => void; readonly canWrite: boolean }
) => {
  const [url, setUrl] = useState("")
  const [types, setTypes] = useState<Array<string>>(["milestone.achieved"])
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const create = useAction(() =>
    post<{ secret: string }>("/v1/api/hooks", { programId: props.programId, url, eventTypes: types })
  )
  return (
    <form
      aria-label="Subscribe a URL"
      onSubmit={async (event) => {
        event.preventDefault()
        const answer = await create.act()
        if (answer !== undefined) {
          setSecret(answer.value.secret)
          setUrl("")
          props.onCreated()
        }
      }}
    >
      <div class="field">
        <label for="hook-url">Endpoint URL</label>
        <input id="hook-url" type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} required />
      </div>
      <fieldset>
        <legend>Event types</legend>
        <div class="weekdays">
          {eventTypes.map((t) => (
            <label key={t} class="check">
              <input
                type="checkbox"
                checked={types.includes(t)}
                onChange={(e) => setTypes(e.currentTarget.checked ? [...types, t] : types.filter((x) => x !== t))}
              />{" "}
              {t}
            </label>
          ))}
        </div>
      </fieldset>
      <button type="submit" disabled={create.busy || !props.canWrite}>Subscribe</button>
      <ErrorNotice error={create.error} />
      {secret !== undefined ? <ShownOnce label="Signing secret of the new subscription" value={secret} /> : null}
    </form>
  )
}

const Samples = (props: { readonly programId: string }) => {
  const [type, setType] = useState(eventTypes[0]!)
  const [shown, setShown] = useState<string | undefined>(undefined)
  const [samples] = useResource<ReadonlyArray<unknown>>(
    shown === undefined
      ? undefined
      : withQuery(`/v1/api/programs/${id(props.programId)}/webhook-samples`, { type: shown })
  )
  return (
    <>
      <form
        class="inline"
        aria-label="Sample payloads"
        onSubmit={(event) => {
          event.preventDefault()
          setShown(type)
        }}
      >
        <label>
          Event type{" "}
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            {eventTypes.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </label>
        <button type="submit">Show samples</button>
      </form>
      {shown === undefined ? null : (
        <Loaded resource={samples} label="samples">
          {(data) => (
            <pre
              class="json"
              tabIndex={0}
              aria-label={`Sample payloads of ${shown}`}
            >{JSON.stringify(data, null, 2)}</pre>
          )}
        </Loaded>
      )}
    </>
  )
}

const RotateSecret = (props: { readonly programId: string; readonly canWrite: boolean }) => {
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const rotate = useAction(() =>
    post<{ webhookSecret: string }>(`/v1/api/programs/${id(props.programId)}/webhook-secret`)
  )
  return (
    <>
      <p>
        Automations that record actions through the webhook door send this program's secret. A new one replaces the old
        at once: update your automations after rotating.
      </p>
      <button
        type="button"
        disabled={rotate.busy || !props.canWrite}
        onClick={async () => {
          const answer = await rotate.act()
          if (answer !== undefined) setSecret(answer.value.webhookSecret)
        }}
      >
        Rotate webhook secret
      </button>
      <ErrorNotice error={rotate.error} />
      {secret !== undefined ? <ShownOnce label="New webhook secret" value={secret} /> : null}
    </>
  )
}

export const Webhooks = (props: { readonly programId: string; readonly canWrite: boolean }) => {
  const [hooks, reload] = useResource<{ hooks: ReadonlyArray<Hook> }>("/v1/api/hooks")
  const [open, setOpen] = useState<string | undefined>(undefined)
  const remove = useAction((hookId: string) => del(`/v1/api/hooks/${id(hookId)}`))
  return (
    <>
      <section aria-labelledby="subscriptions-heading">
        <h2 id="subscriptions-heading">Subscriptions</h2>
        <Loaded resource={hooks} label="subscriptions">
          {(data) => {
            const mine = data.hooks.filter((h) => h.programId === props.programId)
            return mine.length === 0 ? <Empty>No subscription for this program.</Empty> : (
              <ul class="cards">
                {mine.map((hook) => (
                  <li key={hook.id} class="card">
                    <p>
                      <strong id={`hook-${hook.id}`}>{hook.url}</strong>
                    </p>
                    <p class="hint">
                      {hook.eventTypes.join(", ")} · since {dateTime(hook.createdAt)}
                      {hook.createdBy !== undefined ? ` · by ${hook.createdBy.kind} ${hook.createdBy.id}` : ""}
                    </p>
                    <div class="row">
                      <button
                        type="button"
                        aria-expanded={open === hook.id}
                        aria-describedby={`hook-${hook.id}`}
                        onClick={() => setOpen(open === hook.id ? undefined : hook.id)}
                      >
                        Recent deliveries
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-describedby={`hook-${hook.id}`}
                        disabled={remove.busy || !props.canWrite}
                        onClick={async () => {
                          await remove.act(hook.id)
                          reload()
                        }}
                      >
                        Delete
                      </button>
                    </div>
                    {open === hook.id ? <Deliveries hook={hook} canWrite={props.canWrite} /> : null}
                  </li>
                ))}
              </ul>
            )
          }}
        </Loaded>
        <ErrorNotice error={remove.error} />
      </section>
      <section aria-labelledby="subscribe-heading">
        <h2 id="subscribe-heading">Subscribe a URL</h2>
        <Subscribe programId={props.programId} onCreated={reload} canWrite={props.canWrite} />
      </section>
      <section aria-labelledby="samples-heading">
        <h2 id="samples-heading">Samples</h2>
        <Samples programId={props.programId} />
      </section>
      <section aria-labelledby="secret-heading">
        <h2 id="secret-heading">Webhook secret</h2>
        <RotateSecret programId={props.programId} canWrite={props.canWrite} />
      </section>
    </>
  )
}
