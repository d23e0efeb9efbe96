import { isRunId } from '../ids.js'
import { isStorageId } from '../../validation/index.js'

/** The schema header of every command on TOPIC_RUNS_CONTROL. */
export const COMMAND_SCHEMA = 'run-command@1'

/** A run accepted by some node, for the owner of its partition to execute. */
export interface StartCommand {
  type: 'start'
  run_id: string
  tenant_id: string
  mode: string
  message: string
  options: Record<string, unknown>
  conversation_id: string | null
  /** When it was accepted (ms since the epoch): the run's `created_at`, and the time in its id. */
  created_at: number
  /** The accepting client's address, in the open mode (`HARNESS_MAX_RUNS_IN_FLIGHT_PER_ADDRESS`). */
  address?: string
}

/** A cancel asked through some node; the owner applies it only to a run of the same tenant. */
export interface CancelCommand {
  type: 'cancel'
  run_id: string
  tenant_id: string
}

export type RunCommand = StartCommand | CancelCommand

export function encodeCommand (command: RunCommand): string {
  return JSON.stringify(command)
}

/**
 * A command as the owner reads it from the topic, or undefined for anything
 * this gateway did not write (another schema, bad JSON, a field of the wrong
 * shape): the topic may be writable by others, and their messages are skipped.
 */
export function decodeCommand (text: string, schema: string | undefined): RunCommand | undefined {
  if (schema !== COMMAND_SCHEMA) return undefined
  let c: Record<string, unknown>
  try {
    c = JSON.parse(text) as Record<string, unknown>
  } catch {
    return undefined
  }
  if (typeof c !== 'object' || c === null) return undefined
  const runId = c['run_id']
  const tenant = c['tenant_id']
  if (typeof runId !== 'string' || !isRunId(runId) || typeof tenant !== 'string' || !isStorageId(tenant)) return undefined
  if (c['type'] === 'cancel') return { type: 'cancel', run_id: runId, tenant_id: tenant }
  if (c['type'] !== 'start') return undefined
  const { mode, message, options, conversation_id: conversationId, created_at: createdAt } = c
  if (typeof mode !== 'string' || typeof message !== 'string') return undefined
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return undefined
  if (conversationId !== null && typeof conversationId !== 'string') return undefined
  if (typeof createdAt !== 'number' || !Number.isSafeInteger(createdAt) || createdAt < 0) return undefined
  const address = typeof c['address'] === 'string' && c['address'].length <= 64 ? { address: c['address'] } : {}
  return { type: 'start', run_id: runId, tenant_id: tenant, mode, message, options: options as Record<string, unknown>, conversation_id: conversationId, created_at: createdAt, ...address }
}
