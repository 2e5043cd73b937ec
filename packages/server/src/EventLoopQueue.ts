/**
 * Work that can wait for the database's answers, run a few jobs per turn of the event loop: the
 * front of each action (decode, auth, joining its batch) and the hand-back of its answer. Node
 * runs every callback that is ready in one turn, so a burst of requests or responses would run
 * ahead of the reply a batch waits for, and the batch would stall with Postgres idle; in slices,
 * the reply is taken within one slice ([decisions/0009](../../../docs/decisions/0009-server-process.md)).
 */

/** Queues a job: it runs after the callbacks ready now, in order with the other jobs of its lane. */
export type Enqueue = (job: () => void) => void

/** A queue whose own jobs wait behind those queued `ahead`; both lanes share each turn's slice. */
export interface Queue extends Enqueue {
  /**
   * Queues a job ahead of the queue's own jobs, in order with the other jobs queued ahead: for the
   * answers that callers wait on. An action's front that waits a turn longer still joins the
   * batch after the one in flight, which it could not join anyway; an answer that waits adds its
   * wait to its caller's latency (docs/performance.md).
   */
  readonly ahead: Enqueue
}

/** Jobs in a plain array read from `head` and emptied when drained: no allocation per job but its slot. */
class Lane {
  private readonly jobs: Array<(() => void) | undefined> = []
  private head = 0

  get waiting(): number {
    return this.jobs.length - this.head
  }

  push(job: () => void): void {
    this.jobs.push(job)
  }

  /** Runs up to `budget` of the jobs queued before this call and answers how many ran. */
  run(budget: number): number {
    const end = Math.min(this.jobs.length, this.head + budget)
    const start = this.head
    try {
      while (this.head < end) {
        const job = this.jobs[this.head]!
        this.jobs[this.head++] = undefined
        job()
      }
    } finally {
      if (this.head >= this.jobs.length) {
        this.jobs.length = 0
        this.head = 0
      }
    }
    return end - start
  }
}

/**
 * A queue that runs at most `perTurn` jobs each time the event loop checks for immediates
 * (`setImmediate`), those queued `ahead` first, so that I/O callbacks get a turn between slices. A
 * job that throws leaves the queue working: the rest still run, in later turns.
 */
export const make = (perTurn: number): Queue => {
  const slice = Math.max(1, Math.floor(perTurn))
  const ahead = new Lane()
  const own = new Lane()
  let scheduled = false

  const drain = (): void => {
    try {
      own.run(slice - ahead.run(slice))
    } finally {
      if (ahead.waiting > 0 || own.waiting > 0) {
        setImmediate(drain)
      } else {
        scheduled = false
      }
    }
  }

  const queueIn = (lane: Lane) => (job: () => void): void => {
    lane.push(job)
    if (scheduled) return
    scheduled = true
    setImmediate(drain)
  }

  return Object.assign(queueIn(own), { ahead: queueIn(ahead) })
}

/**
 * The process's queue, which the fast path's action fronts and, ahead of them, the reference
 * server's ingest answers share (one event loop, one queue). Sixteen jobs a turn, about half a
 * group's answers: small slices cost the loop a turn each, a whole burst at once is what this
 * avoids, and the best slice moves with the host (docs/performance.md).
 */
export const shared: Queue = make(16)
