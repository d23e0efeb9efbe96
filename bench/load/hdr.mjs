// The full latency spectrum as an HdrHistogram log (hdr-histogram-js): one
// interval histogram per second of the run, in microseconds, the format
// HdrHistogram's own tools (HistogramLogProcessor, hdrhistogram.github.io's
// plotter) and wrk2/jHiccup users read. Beside the report's JSON.
import { writeFileSync } from 'node:fs'
import hdr from 'hdr-histogram-js'

const US_PER_MS = 1000

/** A histogram of latencies in µs, 1 µs to an hour at three significant digits. */
export function latencyHistogram () {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3, autoResize: true })
}

/** Records `ms` into a histogram of µs. */
export function recordMs (histogram, ms) {
  histogram.recordValue(Math.max(1, Math.round(ms * US_PER_MS)))
}

/** Writes `seconds` (each `{ hdr }`, second i of the run) as a log starting at `startedAt`. */
export function writeHdrLog (file, seconds, startedAt, comment) {
  let text = ''
  const writer = new hdr.HistogramLogWriter(chunk => { text += chunk })
  writer.outputComment(comment)
  writer.outputComment('values in microseconds (latency from the due time to the end of the answer); max column in ms')
  writer.outputLogFormatVersion()
  writer.outputStartTime(startedAt.getTime())
  writer.outputLegend()
  seconds.forEach((s, i) => { if (s.hdr.totalCount > 0) writer.outputIntervalHistogram(s.hdr, i, i + 1, US_PER_MS) })
  writeFileSync(file, text)
}
