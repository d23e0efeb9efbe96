import { EVENT_TYPES } from './catalogue.js'
import { MAX_MESSAGE_BYTES } from './request.js'
import { IN_FLIGHT, TERMINAL } from './types.js'

const json = (schema: object): object => ({ 'application/json': { schema } })
const ref = (name: string): object => ({ $ref: `#/components/schemas/${name}` })
const error = (description: string): object => ({ description, content: json(ref('HarnessError')) })

const RunEvent = {
  type: 'object',
  description: 'One event of a run: the `data` of its SSE frame, an element of the record\'s `events`, and the value of its message on TOPIC_RUNS.',
  required: ['id', 'type', 'seq', 'run_id', 'tenant_id', 'message', 'data', 'created_at'],
  properties: {
    id: { type: 'string', pattern: '^[0-9]+$', description: 'the decimal string of `seq`; the SSE `id`, what Last-Event-ID resumes after' },
    type: { type: 'string', enum: EVENT_TYPES },
    seq: { type: 'integer', minimum: 1, description: 'dense per run: 1, 2, 3, ...' },
    run_id: { type: 'string' },
    tenant_id: { type: 'string' },
    message: { type: 'string' },
    data: { type: 'object', description: 'the type\'s own fields; lifecycle events carry `status` and the record as `run`' },
    created_at: { type: 'string', format: 'date-time' }
  }
}

const RunRecord = {
  type: 'object',
  properties: {
    run_id: { type: 'string' },
    tenant_id: { type: 'string' },
    mode: { type: 'string', enum: ['agentic', 'echo'] },
    message: { type: 'string' },
    status: { type: 'string', enum: [...IN_FLIGHT, ...TERMINAL] },
    created_at: { type: 'string', format: 'date-time' },
    started_at: { type: ['string', 'null'], format: 'date-time' },
    ended_at: { type: ['string', 'null'], format: 'date-time' },
    result: {},
    answer: { type: ['string', 'null'] },
    artifacts: { type: 'array', items: { type: 'object' } },
    conversation_id: { type: ['string', 'null'] },
    error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
    last_event_id: { type: 'integer' },
    events: { type: 'array', items: ref('RunEvent') }
  }
}

const RunRequest = {
  type: 'object',
  required: ['message'],
  properties: {
    message: { type: 'string', description: `at most ${MAX_MESSAGE_BYTES} bytes (UTF-8)` },
    mode: { type: 'string', enum: ['agentic', 'echo', 'auto'], default: 'agentic', description: '`auto` runs as agentic' },
    options: { type: 'object', description: 'for the mode; echo reads `steps` and `delay_ms`' },
    conversation_id: { type: ['string', 'null'], maxLength: 256, description: 'kept on the record' },
    tenant_id: { type: 'string', deprecated: true, description: 'ignored: the tenant is the verified header\'s' }
  }
}

const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' } }
const tenant = { name: 'X-Svc-Tenant-Client-Id', in: 'header', required: false, schema: { type: 'string' }, description: 'the tenant, set by the front door; required when SVC_HARNESS_AUTH_ENABLED' }
const harness = {
  servers: [{ url: '{harness_url}', description: 'HARNESS_PORT; also under {base_url}/api/v1/orgs/{slug}/harness', variables: { harness_url: { default: 'http://127.0.0.1:8081' } } }],
  parameters: [tenant]
}
const security = [{ bearer: [] }]
const common = { 401: error('Token missing or invalid (the spec\'s details)') }
const owned = { ...common, 403: error('cross_tenant_replay:run'), 404: error('run_not_found') }

/** The harness routes in `/openapi.json`. */
export const harnessOpenApi = {
  schemas: { RunRequest, RunRecord, RunEvent, HarnessError: { type: 'object', properties: { detail: { type: 'string' } } } },
  paths: {
    '/runs': {
      ...harness,
      post: {
        summary: 'Run and wait for the end',
        security,
        requestBody: { required: true, content: json(ref('RunRequest')) },
        responses: { 200: { description: 'The terminal record', content: json(ref('RunRecord')) }, 202: { description: 'HARNESS_SYNC_TIMEOUT_MS passed first: the record so far', content: json(ref('RunRecord')) }, 400: error('Bad body'), ...common }
      }
    },
    '/runs:start': {
      ...harness,
      post: {
        summary: 'Start a run',
        security,
        requestBody: { required: true, content: json(ref('RunRequest')) },
        responses: {
          202: { description: 'Queued', content: json({ type: 'object', properties: { run_id: { type: 'string' }, status: { const: 'queued' }, links: { type: 'object', properties: { self: { type: 'string' }, stream: { type: 'string' }, cancel: { type: 'string' } } } } }) },
          400: error('Bad body'),
          ...common
        }
      }
    },
    '/runs/{id}': {
      ...harness,
      get: { summary: 'The run\'s record with its events', security, parameters: [id], responses: { 200: { description: 'The record', content: json(ref('RunRecord')) }, ...owned } }
    },
    '/runs/{id}/stream': {
      ...harness,
      get: {
        summary: 'The run\'s events as server-sent events',
        description: 'Frames `id: <id>`, `event: <type>`, `data: <RunEvent>`; stored events after Last-Event-ID, then live ones, until `run.completed` or `run.failed`. A subscriber too slow to keep up gets `event: error` with `{"error":"stream_overflow","run_id","last_event_id"}` and is closed.',
        security,
        parameters: [id, { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9]+$' } }],
        responses: { 200: { description: 'The stream', content: { 'text/event-stream': { schema: { type: 'string' } } } }, 400: error('Last-Event-ID is not a non-negative integer'), ...owned }
      }
    },
    '/runs/{id}/cancel': {
      ...harness,
      post: { summary: 'Cancel a run in flight', security, parameters: [id], responses: { 200: { description: 'The cancelled record', content: json(ref('RunRecord')) }, 409: error('run_not_in_flight:<status>'), ...owned } }
    },
    '/skills': {
      ...harness,
      get: { summary: 'Skills a run may use (none yet)', security, responses: { 200: { description: 'An empty list', content: json({ type: 'array', maxItems: 0 }) }, ...common } }
    }
  }
}
