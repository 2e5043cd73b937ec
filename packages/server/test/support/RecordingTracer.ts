/** The runtime's own tracer, with every span it starts kept in an array the test reads. */
import { Effect, Layer, Tracer } from "effect"

export const layer = (spans: Array<Tracer.Span>) =>
  Layer.unwrapEffect(Effect.map(Effect.tracer, (native) =>
    Layer.setTracer(Tracer.make({
      span: (...args) => {
        const span = native.span(...args)
        spans.push(span)
        return span
      },
      context: native.context
    }))))

/** Spans end when their response closes, just after the client has it: waits (up to 1 s) for `count` ended spans. */
export const ended = (spans: Array<Tracer.Span>, count: number) =>
  Effect.promise(async () => {
    for (let i = 0; i < 100 && spans.filter((s) => s.status._tag === "Ended").length < count; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })
