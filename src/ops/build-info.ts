import { Gauge, type Registry } from 'prom-client'
import { VERSION } from '../config/index.js'

/**
 * `gateway_build_info`, always 1: what runs, as labels, so a dashboard can
 * join it to any series by instance and a rollout shows as a change of label.
 */
export function buildInfo (registry: Registry, uws: string): void {
  new Gauge({ name: 'gateway_build_info', help: 'The gateway\'s version, the Node.js it runs on and the uWS build that loaded; always 1', labelNames: ['version', 'node', 'uws'], registers: [registry] })
    .set({ version: VERSION, node: process.versions.node, uws }, 1)
}
