/**
 * The TCP socket of each pooled connection (node-postgres's `stream` option): the statements
 * issued on it during one tick of the event loop leave in one write when the tick ends, in order.
 */
import * as Net from "node:net"

/**
 * node-postgres writes every statement on its own, corking the socket only around the messages
 * of one statement, and on a pipelined connection each of those writes wakes the backend again:
 * a batch's side-by-side statements (`BEGIN` with the first, the locks with the days and
 * achievements, the writes) would cost one wake-up per statement. This socket defers each uncork
 * to the end of the tick, the batching Node documents for `writable.cork()`, so that whatever the
 * driver corked during the tick leaves in one write. A statement sent without corking (a text
 * without values, on the simple protocol) leaves at once unless the socket is held already:
 * `BEGIN` is therefore sent on the extended protocol (`transactor.ts`). Over TLS the driver writes
 * to the TLS socket it wraps around this one, and statements leave one by one.
 */
export class TickSocket extends Net.Socket {
  /** Uncorks asked for during this tick, made when it ends. */
  private deferred = 0

  private readonly release = () => {
    const n = this.deferred
    this.deferred = 0
    for (let i = 0; i < n; i++) Net.Socket.prototype.uncork.call(this)
  }

  override uncork(): void {
    if (this.deferred++ === 0) process.nextTick(this.release)
  }
}

/** For `new pg.Pool({ stream })`: a socket of its own for each connection. */
export const make = (): Net.Socket => new TickSocket()
