/**
 * Client-side navigation under `/console`: the current path as state, links that push history
 * instead of reloading, and focus moved to the new page's heading so keyboard and screen-reader
 * users land where the content starts.
 */
import { useEffect, useState } from "preact/hooks"

export const base = "/console"

const listeners = new Set<() => void>()

/** Goes to `href` (a path under `/console`) without reloading. */
export const navigate = (href: string): void => {
  if (href === location.pathname + location.search) return
  history.pushState(null, "", href)
  for (const listener of listeners) listener()
}

addEventListener("popstate", () => {
  for (const listener of listeners) listener()
})

/** The current location's path and query, re-rendering on every navigation. */
export const useLocation = (): { readonly path: string; readonly query: URLSearchParams } => {
  const [, setTick] = useState(0)
  useEffect(() => {
    const listener = () => setTick((n) => n + 1)
    listeners.add(listener)
    return () => void listeners.delete(listener)
  }, [])
  return { path: location.pathname, query: new URLSearchParams(location.search) }
}

/** A click on a console link: navigates in place unless the user asked for a new tab or window. */
export const onLinkClick = (event: MouseEvent): void => {
  const anchor = event.currentTarget as HTMLAnchorElement | null
  if (anchor === null || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
    return
  }
  event.preventDefault()
  navigate(anchor.getAttribute("href") ?? base)
}
