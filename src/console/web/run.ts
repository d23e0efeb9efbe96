import { ApiError, getJson, IN_FLIGHT, newer, postJson, type RunEvent, type RunRecord } from './api.js'
import { clock, h, setConnection, span } from './dom.js'
import { EventStream } from './sse.js'

const TERMINAL = new Set(['run.completed', 'run.failed'])
/** Past this, an event's data is shown cut (the whole of it is in `GET /runs/{id}`). */
const DATA_CHARS = 600

/**
 * A run's page: its record, kept current by its lifecycle events, and its
 * events as a live timeline with their ids and times. The stream resumes
 * after a drop with `Last-Event-ID` (sse.ts); an event is shown once, by
 * its `seq`, whatever the connection did.
 */
export function runPage (main: HTMLElement, runId: string): void {
  let record: RunRecord | undefined
  const seen = new Set<number>()
  const head = h('section', { class: 'panel record', id: 'record' }, h('p', { class: 'muted' }, 'loading…'))
  const timeline = h('ol', { class: 'timeline', id: 'timeline' })
  const count = h('span', { class: 'muted', id: 'event-count' })
  main.replaceChildren(head, h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', {}, 'Events'), count), timeline))

  function show (): void {
    const r = record
    if (r === undefined) return
    const cancel = h('button', { type: 'button', id: 'cancel', class: 'danger', disabled: !IN_FLIGHT.has(r.status) }, 'Cancel run')
    cancel.addEventListener('click', () => {
      cancel.disabled = true
      postJson<RunRecord>(`/runs/${encodeURIComponent(runId)}/cancel`).then(update, err => {
        note.textContent = `Not cancelled: ${(err as Error).message}`
      })
    })
    const note = h('span', { class: 'note' })
    const field = (name: string, value: Node | string | null | undefined): HTMLElement[] => [h('dt', {}, name), h('dd', {}, value ?? '—')]
    head.replaceChildren(
      h('div', { class: 'panel-head' }, h('h2', { class: 'mono' }, r.run_id), h('span', { class: `badge status-${r.status}`, id: 'run-status' }, r.status),
        h('span', { class: 'spacer' }), note, cancel),
      h('dl', { class: 'fields' },
        ...field('mode', r.mode),
        ...field('created', h('span', { class: 'mono', title: r.created_at }, clock(r.created_at))),
        ...field('started', r.started_at && h('span', { class: 'mono', title: r.started_at }, clock(r.started_at))),
        ...field('ended', r.ended_at && h('span', { class: 'mono', title: r.ended_at }, `${clock(r.ended_at)} (${span(r.started_at ?? r.created_at, r.ended_at)})`)),
        ...field('conversation', r.conversation_id),
        ...field('message', h('span', { class: 'pre' }, r.message)),
        ...field('answer', r.answer && h('span', { class: 'pre' }, r.answer)),
        ...field('error', r.error && `${r.error.code}: ${r.error.message}`)))
  }

  function update (incoming: RunRecord): void {
    record = newer(record, incoming)
    show()
  }

  let received = 0
  function add (e: RunEvent): void {
    // Counted before the check below, so a stream that repeats itself shows (tests read it).
    timeline.dataset['received'] = String(++received)
    if (seen.has(e.seq)) return
    seen.add(e.seq)
    let data = JSON.stringify(e.data.run === undefined ? e.data : { ...e.data, run: '…' })
    if (data.length > DATA_CHARS) data = `${data.slice(0, DATA_CHARS)}…`
    timeline.append(h('li', { class: `event type-${e.type.replace(/\./g, '-')}`, 'data-seq': e.seq, 'data-type': e.type },
      h('span', { class: 'seq mono' }, `#${e.id}`),
      h('time', { class: 'mono', datetime: e.created_at, title: e.created_at }, clock(e.created_at)),
      h('span', { class: 'type mono' }, e.type),
      h('span', { class: 'msg' }, e.message),
      h('code', { class: 'data' }, data)))
    count.textContent = `${seen.size} events`
    if (e.data.run !== undefined) update(e.data.run as RunRecord)
  }

  getJson<RunRecord>(`/runs/${encodeURIComponent(runId)}`).then(update, err => {
    const why = err instanceof ApiError && err.status === 404 ? 'No such run.' : err instanceof ApiError && err.status === 403 ? 'This run belongs to another tenant.' : (err as Error).message
    head.replaceChildren(h('p', { class: 'error', id: 'run-error' }, why))
  })
  new EventStream(`/runs/${encodeURIComponent(runId)}/stream`, {
    onFrame: frame => {
      const e = JSON.parse(frame.data) as RunEvent
      add(e)
      return TERMINAL.has(e.type)
    },
    onState: (state, detail) => {
      if (state === 'ended') setConnection('ended', 'run ended')
      else if (state === 'failed') setConnection('offline', `offline: ${detail}`)
      else setConnection(state)
    }
  })
}
