import { Counter, Histogram, type Registry } from 'prom-client'
import type { Bus } from './types.js'

/**
 * Every publish of `bus` timed by topic and result, its messages counted,
 * and its failures counted by topic. One publish is a batch (telemetry,
 * run events, envelopes), so this costs a timer per batch, not per record.
 * The publish is replaced on the bus itself, so every caller is measured.
 */
export function measurePublish (bus: Bus, registry: Registry): void {
  const duration = new Histogram({
    name: 'gateway_bus_publish_duration_seconds',
    help: 'Bus publishes (one batch each) from the call to the acknowledgment, by topic and result (ok or error)',
    labelNames: ['topic', 'result'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry]
  })
  const messages = new Counter({ name: 'gateway_bus_published_messages_total', help: 'Messages the bus acknowledged, by topic', labelNames: ['topic'], registers: [registry] })
  const errors = new Counter({ name: 'gateway_bus_publish_errors_total', help: 'Bus publishes that failed (their messages were not acknowledged), by topic', labelNames: ['topic'], registers: [registry] })
  const publish = bus.publish.bind(bus)
  bus.publish = (topic, batch) => {
    const end = duration.startTimer({ topic })
    return publish(topic, batch).then(() => {
      end({ result: 'ok' })
      messages.inc({ topic }, batch.length)
    }, (err: unknown) => {
      end({ result: 'error' })
      errors.inc({ topic })
      throw err
    })
  }
}
