import { EVENT_TYPES } from './catalogue.js'
import { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, LIST_SCAN_BUDGET } from './list.js'
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
const harness = { parameters: [tenant] }
const security = [{ bearer: [] }]
const common = { 401: error('Token missing or invalid (the spec\'s details)') }
const owned = { ...common, 403: error('cross_tenant_replay:run'), 404: error('run_not_found') }
const starting = { 429: error('run_storage_limit: the tenant\'s runs hold HARNESS_TENANT_STORED_BYTES, or wrote faster than HARNESS_TENANT_WRITE_BYTES_PER_S'), 503: error('runs_in_flight_limit, runs_unavailable') }
const streaming = { 429: error('too_many_streams: HARNESS_MAX_STREAMS_PER_TENANT or HARNESS_MAX_STREAMS') }

/** The harness routes in `/openapi.json`. */
export const harnessOpenApi = {
  tag: { name: 'harness', description: 'Runs: start, follow, list and cancel them (HARNESS_PORT; through the front door under /api/v1/orgs/{slug}/harness)' },
  errorSchema: ref('HarnessError'),
  schemas: { RunRequest, RunRecord, RunEvent, HarnessError: { type: 'object', properties: { detail: { type: 'string' } } } },
  paths: {
    '/runs': {
      ...harness,
      get: {
        operationId: 'listRuns', summary: 'The tenant\'s runs, newest first',
        description: `Records without their events. A page holds at most \`limit\` runs; with a \`status\` or \`mode\` filter it may hold fewer, even none, while \`next_cursor\` is not null (at most ${LIST_SCAN_BUDGET} runs are looked at per page): follow \`next_cursor\` until it is null.`,
        security,
        parameters: [
          { name: 'status', in: 'query', required: false, schema: { type: 'string' }, description: `comma-separated: ${[...IN_FLIGHT, ...TERMINAL].join(', ')}` },
          { name: 'mode', in: 'query', required: false, schema: { type: 'string' }, description: 'comma-separated mode names' },
          { name: 'since', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'created at or after' },
          { name: 'until', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'created before' },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: LIST_MAX_LIMIT, default: LIST_DEFAULT_LIMIT } },
          { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'the `next_cursor` of the previous page, with the same filters' }
        ],
        responses: {
          200: { description: 'A page', content: json({ type: 'object', required: ['runs', 'next_cursor'], properties: { runs: { type: 'array', items: ref('RunRecord') }, next_cursor: { type: ['string', 'null'] } } }) },
          400: error('A bad filter, limit or cursor'),
          ...common
        }
      },
      post: {
        operationId: 'runAndWait', summary: 'Run and wait for the end',
        security,
        requestBody: { required: true, content: json(ref('RunRequest')) },
        responses: { 200: { description: 'The terminal record', content: json(ref('RunRecord')) }, 202: { description: 'HARNESS_SYNC_TIMEOUT_MS passed first: the record so far', content: json(ref('RunRecord')) }, 400: error('Bad body'), 415: error('Content-Type is not application/json'), ...starting, ...common }
      }
    },
    '/runs:start': {
      ...harness,
      post: {
        operationId: 'startRun', summary: 'Start a run',
        security,
        requestBody: { required: true, content: json(ref('RunRequest')) },
        responses: {
          202: { description: 'Queued', content: json({ type: 'object', properties: { run_id: { type: 'string' }, status: { const: 'queued' }, links: { type: 'object', properties: { self: { type: 'string' }, stream: { type: 'string' }, cancel: { type: 'string' } } } } }) },
          400: error('Bad body'), 415: error('Content-Type is not application/json'),
          ...starting,
          ...common
        }
      }
    },
    '/runs:watch': {
      ...harness,
      get: {
        operationId: 'watchRuns', summary: 'The tenant\'s run transitions, live, as server-sent events',
        description: 'Frames `id: <epoch>.<n>`, `event: <type>` and `data: <RunEvent>` for every lifecycle event (`run.queued`, `run.started`, `run.completed`, `run.failed`; `data.run` is the record as of it) of the tenant\'s runs. Without Last-Event-ID the first frame is `event: ready`. With one this process still keeps, exactly the missed transitions follow; with any other (a restart, or too far behind) `event: reset`: list again. Never ends by itself; a watcher too slow to keep up gets `event: error` `{"error":"stream_overflow","last_event_id"}`.',
        security,
        parameters: [{ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9a-z]+\\.[0-9]+$' } }],
        responses: { 200: { description: 'The feed', content: { 'text/event-stream': { schema: { type: 'string' } } } }, 400: error('Last-Event-ID is not an id of this feed'), ...streaming, ...common }
      }
    },
    '/runs/{id}': {
      ...harness,
      get: { operationId: 'getRun', summary: 'The run\'s record with its events', security, parameters: [id], responses: { 200: { description: 'The record', content: json(ref('RunRecord')) }, ...owned } }
    },
    '/runs/{id}/stream': {
      ...harness,
      get: {
        operationId: 'streamRunEvents', summary: 'The run\'s events as server-sent events',
        description: 'Frames `id: <id>`, `event: <type>`, `data: <RunEvent>`; stored events after Last-Event-ID, then live ones, until `run.completed` or `run.failed`. A subscriber too slow to keep up gets `event: error` with `{"error":"stream_overflow","run_id","last_event_id"}` and is closed.',
        security,
        parameters: [id, { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9]+$' } }],
        responses: { 200: { description: 'The stream', content: { 'text/event-stream': { schema: { type: 'string' } } } }, 400: error('Last-Event-ID is not a non-negative integer'), ...streaming, ...owned }
      }
    },
    '/runs/{id}/cancel': {
      ...harness,
      post: { operationId: 'cancelRun', summary: 'Cancel a run in flight', security, parameters: [id], responses: { 200: { description: 'The cancelled record', content: json(ref('RunRecord')) }, 409: error('run_not_in_flight:<status>'), ...owned } }
    },
    '/skills': {
      ...harness,
      get: { operationId: 'listSkills', summary: 'Skills a run may use (none yet)', security, responses: { 200: { description: 'An empty list', content: json({ type: 'array', maxItems: 0 }) }, ...common } }
    }
  }
}
