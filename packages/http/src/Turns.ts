/**
 * Work that can wait for the database's answers, run a few jobs per turn of the event loop: the
 * front of each action (decode, auth, joining its batch) and the hand-back of its answer. Node
 * runs every callback that is ready in one turn, so without this a burst of 25 requests or 25
 * responses (about 2 ms) ran ahead of the reply a batch waited for, and the batch stalled with
 * Postgres idle. In slices, the reply is taken within one slice (docs/performance.md).
 */

/** Queues a job: it runs after the callbacks ready now, in order with the other queued jobs. */
export type Turns = (job: () => void) => void

/**
 * A queue that runs at most `perTurn` jobs each time the event loop checks for immediates
 * (`setImmediate`), so that I/O callbacks get a turn between slices. A job that throws leaves the
 * queue working: the rest still run, in later turns.
 */
export const make = (perTurn: number): Turns => {
  const slice = Math.max(1, Math.floor(perTurn))
  // A plain array read from `head` and emptied when drained: no allocation per job but its slot.
  const queue: Array<(() => void) | undefined> = []
  let head = 0
  let scheduled = false

  const drain = (): void => {
    const end = Math.min(queue.length, head + slice)
    try {
      while (head < end) {
        const job = queue[head]!
        queue[head++] = undefined
        job()
      }
    } finally {
      if (head < queue.length) {
        setImmediate(drain)
      } else {
        queue.length = 0
        head = 0
        scheduled = false
      }
    }
  }

  return (job) => {
    queue.push(job)
    if (scheduled) return
    scheduled = true
    setImmediate(drain)
  }
}

/**
 * The process's queue, which the fast path and the reference server's ingest hand-off share (one
 * event loop, one queue). Sixteen jobs a turn, about half a batch's answers: in `pnpm bench` on the
 * twelfth session's host it served more ingest than 4, 8 or 64 (each turn costs the loop a round of
 * its own), as much as 32, and a whole burst at once is what this avoids. The best slice moves
 * with the host (docs/performance.md).
 */
export const shared: Turns = make(16)
