/**
 * The console's charts, drawn as SVG in the page's own colours (they follow light and dark): bars
 * for counts, columns for counts per day, and estimates with their 95 % intervals. Each names what
 * it shows for assistive technology; the numbers are also in a table next to it.
 */

export interface Bar {
  readonly label: string
  readonly value: number
}

/** Horizontal bars, one per label. */
export const Bars = (props: { readonly title: string; readonly bars: ReadonlyArray<Bar> }) => {
  const max = Math.max(1, ...props.bars.map((b) => b.value))
  const row = 28
  const labelWidth = 110
  const width = 520
  const height = props.bars.length * row + 8
  return (
    <svg
      class="chart"
      role="img"
      aria-label={`${props.title}: ${props.bars.map((b) => `${b.label} ${b.value}`).join(", ")}`}
      viewBox={`0 0 ${width} ${height}`}
      preserveAspectRatio="xMinYMin meet"
    >
      {props.bars.map((bar, i) => {
        const w = ((width - labelWidth - 60) * bar.value) / max
        const y = i * row + 4
        return (
          <g key={bar.label}>
            <text x={labelWidth - 8} y={y + row / 2 + 4} text-anchor="end" class="axis">{bar.label}</text>
            <rect
              x={labelWidth}
              y={y + 3}
              width={Math.max(w, bar.value > 0 ? 2 : 0)}
              height={row - 8}
              class="bar"
              rx="2"
            />
            <text x={labelWidth + w + 6} y={y + row / 2 + 4} class="value">{bar.value}</text>
          </g>
        )
      })}
    </svg>
  )
}

/** Columns over consecutive days (`YYYY-MM-DD`), a day with nothing drawn as zero. */
export const Days = (
  props: {
    readonly title: string
    readonly from: string
    readonly to: string
    readonly values: ReadonlyMap<string, number>
  }
) => {
  const days: Array<string> = []
  const start = Date.parse(`${props.from}T00:00:00Z`)
  const end = Date.parse(`${props.to}T00:00:00Z`)
  for (let t = start; t <= end && days.length < 400; t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10))
  const max = Math.max(1, ...days.map((d) => props.values.get(d) ?? 0))
  const width = 600
  const height = 180
  const bottom = 24
  const step = (width - 40) / Math.max(days.length, 1)
  const total = days.reduce((sum, d) => sum + (props.values.get(d) ?? 0), 0)
  return (
    <svg
      class="chart"
      role="img"
      aria-label={`${props.title}, ${props.from} to ${props.to}: ${total} in all, at most ${max} on one day`}
      viewBox={`0 0 ${width} ${height}`}
    >
      <text x="0" y="12" class="axis">{max}</text>
      <text x="0" y={height - bottom} class="axis">0</text>
      <line x1="36" x2={width} y1={height - bottom} y2={height - bottom} class="grid" />
      {days.map((day, i) => {
        const value = props.values.get(day) ?? 0
        const h = ((height - bottom - 16) * value) / max
        return (
          <rect
            key={day}
            x={40 + i * step + 1}
            y={height - bottom - h}
            width={Math.max(step - 2, 1)}
            height={h}
            class="bar"
          >
            <title>{`${day}: ${value}`}</title>
          </rect>
        )
      })}
      <text x="40" y={height - 6} class="axis">{props.from}</text>
      <text x={width} y={height - 6} text-anchor="end" class="axis">{props.to}</text>
    </svg>
  )
}

export interface Interval {
  readonly label: string
  readonly estimate: number
  readonly lower: number
  readonly upper: number
}

/** Estimates with their intervals on one axis, 0 marked: an interval that crosses it does not exclude "no effect". */
export const Intervals = (
  props: { readonly title: string; readonly intervals: ReadonlyArray<Interval>; readonly format: (x: number) => string }
) => {
  const values = props.intervals.flatMap((i) => [i.lower, i.upper, 0])
  const lo = Math.min(...values)
  const hi = Math.max(...values)
  const span = hi - lo === 0 ? 1 : hi - lo
  const width = 600
  const left = 90
  const row = 34
  const height = props.intervals.length * row + 30
  const x = (v: number) => left + ((width - left - 20) * (v - lo)) / span
  return (
    <svg
      class="chart"
      role="img"
      aria-label={`${props.title}: ${
        props.intervals.map((i) =>
          `${i.label} ${props.format(i.estimate)} (95 % interval ${props.format(i.lower)} to ${props.format(i.upper)})`
        ).join("; ")
      }`}
      viewBox={`0 0 ${width} ${height}`}
    >
      <line x1={x(0)} x2={x(0)} y1="0" y2={height - 20} class="zero" />
      <text x={x(0)} y={height - 4} text-anchor="middle" class="axis">0</text>
      <text x={left} y={height - 4} class="axis">{props.format(lo)}</text>
      <text x={width - 20} y={height - 4} text-anchor="end" class="axis">{props.format(hi)}</text>
      {props.intervals.map((i, n) => {
        const y = n * row + 18
        return (
          <g key={i.label}>
            <text x={left - 10} y={y + 4} text-anchor="end" class="axis">{i.label}</text>
            <line x1={x(i.lower)} x2={x(i.upper)} y1={y} y2={y} class="interval" />
            <line x1={x(i.lower)} x2={x(i.lower)} y1={y - 6} y2={y + 6} class="interval" />
            <line x1={x(i.upper)} x2={x(i.upper)} y1={y - 6} y2={y + 6} class="interval" />
            <circle cx={x(i.estimate)} cy={y} r="5" class="estimate" />
          </g>
        )
      })}
    </svg>
  )
}
