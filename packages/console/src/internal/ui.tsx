/**
 * The console's shared pieces: data loading with its three states (loading, error, data), links,
 * notices, a copy button for secrets shown once, and date helpers.
 */
import type { ComponentChildren } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { ApiError, get } from "./api.js"
import { onLinkClick } from "./router.js"

export type Resource<A> =
  | { readonly state: "loading" }
  | { readonly state: "error"; readonly error: ApiError }
  | { readonly state: "ready"; readonly data: A }

const asApiError = (error: unknown): ApiError =>
  error instanceof ApiError ? error : new ApiError(0, "ERROR", String(error), undefined)

/** Reads `path` (none while it is undefined) and again when it changes or `reload` is called. */
export function useResource<A>(path: string | undefined): [Resource<A>, () => void] {
  const [resource, setResource] = useState<Resource<A>>({ state: "loading" })
  const [tick, setTick] = useState(0)
  const shown = useRef<string | undefined>(undefined)
  useEffect(() => {
    if (path === undefined) return
    let live = true
    // A reload keeps what is shown until the new answer arrives; another path starts afresh.
    if (shown.current !== path) setResource({ state: "loading" })
    shown.current = path
    get<A>(path).then(
      (data) => live && setResource({ state: "ready", data }),
      (error) => live && setResource({ state: "error", error: asApiError(error) })
    )
    return () => {
      live = false
    }
  }, [path, tick])
  return [resource, useCallback(() => setTick((n) => n + 1), [])]
}

/** Runs a write; tracks whether it is under way and its refusal. */
export const useAction = <Args extends Array<any>, A>(run: (...args: Args) => Promise<A>) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiError | undefined>(undefined)
  // Resolves to `{ value }` when the write succeeded (even with an empty answer), else undefined.
  const act = async (...args: Args): Promise<{ readonly value: A } | undefined> => {
    setBusy(true)
    setError(undefined)
    try {
      return { value: await run(...args) }
    } catch (e) {
      setError(asApiError(e))
      return undefined
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, act, clear: () => setError(undefined) }
}

/** Shows a resource's loading and error states, and `children(data)` once it is there. */
export function Loaded<A>(
  props: { readonly resource: Resource<A>; readonly label: string; readonly children: (data: A) => ComponentChildren }
) {
  return props.resource.state === "loading"
    ? <p class="loading" role="status">Loading {props.label}…</p>
    : props.resource.state === "error"
    ? <ErrorNotice error={props.resource.error} />
    : <>{props.children(props.resource.data)}</>
}

export const ErrorNotice = (props: { readonly error: ApiError | undefined }) =>
  props.error === undefined ? null : (
    <p class="notice error" role="alert">
      {props.error.message}
    </p>
  )

export const Empty = (props: { readonly children: ComponentChildren }) => <p class="empty">{props.children}</p>

export const Link = (
  props: { readonly href: string; readonly children: ComponentChildren; readonly current?: boolean }
) => (
  <a href={props.href} onClick={onLinkClick} aria-current={props.current === true ? "page" : undefined}>
    {props.children}
  </a>
)

/** A secret shown once, with a button that copies it. */
export const ShownOnce = (props: { readonly label: string; readonly value: string }) => {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value)
      setCopied(true)
    } catch {
      const field = document.getElementById("shown-once-value") as HTMLInputElement | null
      field?.select()
    }
  }
  return (
    <div class="shown-once" role="group" aria-labelledby="shown-once-label">
      <p id="shown-once-label">
        <strong>{props.label}</strong> (shown once: copy it now, it cannot be read again)
      </p>
      <div class="row">
        <input id="shown-once-value" readOnly value={props.value} aria-labelledby="shown-once-label" class="secret" />
        <button type="button" onClick={copy}>Copy</button>
      </div>
      <p role="status">{copied ? "Copied to the clipboard." : ""}</p>
    </div>
  )
}

const DAY_MS = 86_400_000

/** The UTC date `n` days before now, `YYYY-MM-DD`. */
export const utcDate = (n = 0): string => new Date(Date.now() - n * DAY_MS).toISOString().slice(0, 10)

export const dateTime = (iso: string | undefined | null): string =>
  iso === undefined || iso === null
    ? "—"
    : new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })

export const percent = (x: number | null | undefined, digits = 1): string =>
  x === null || x === undefined ? "—" : `${(x * 100).toFixed(digits)} %`

/** A date range chosen by the user; the reports default to the last 30 days. */
export interface Range {
  readonly from: string
  readonly to: string
}

export const defaultRange = (): Range => ({ from: utcDate(29), to: utcDate(0) })

export const RangeForm = (props: { readonly range: Range; readonly onChange: (range: Range) => void }) => {
  const [from, setFrom] = useState(props.range.from)
  const [to, setTo] = useState(props.range.to)
  return (
    <form
      class="range"
      aria-label="Date range"
      onSubmit={(event) => {
        event.preventDefault()
        props.onChange({ from, to })
      }}
    >
      <label>
        From <input type="date" name="from" value={from} onInput={(e) => setFrom(e.currentTarget.value)} required />
      </label>
      <label>
        To <input type="date" name="to" value={to} onInput={(e) => setTo(e.currentTarget.value)} required />
      </label>
      <button type="submit">Show</button>
    </form>
  )
}

/** A report answered `paused`: why, and what to do. */
export interface Paused {
  readonly paused: true
  readonly reason: string
  readonly workspaceId: string
  readonly usage: {
    readonly month: string
    readonly plan: string
    readonly limit: number
    readonly activeStreakers: number
  }
}

export const PausedNotice = (props: { readonly paused: Paused }) => (
  <div class="notice paused" role="status">
    <p>
      <strong>Paused</strong>: this workspace has {props.paused.usage.activeStreakers} active streakers in{" "}
      {props.paused.usage.month}, over the {props.paused.usage.limit} its plan ({props.paused.usage.plan}) includes.
    </p>
    <p>
      Counting goes on and nothing is lost. Ask your operator to raise the plan: the report then shows everything
      tracked meanwhile at once.
    </p>
  </div>
)
