import { getJson, IN_FLIGHT, newer, type RunRecord } from './api.js'
import { clock, h, setConnection, span } from './dom.js'
import { runHref } from './place.js'
import { EventStream } from './sse.js'
import { startForm } from './start.js'

const ROW_PX = 36
/** Rows drawn beyond the visible ones, above and below. */
const OVERSCAN = 8
const PAGE = 100
const STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const

interface Page { runs: RunRecord[], next_cursor: string | null }

/**
 * The run list: the tenant's runs newest first, updated live from
 * `/runs:watch` (a new run appears, a status changes), filtered by status,
 * and drawn as a virtual list: only the rows in view are in the document,
 * and further pages are fetched as the list is scrolled, so thousands of
 * runs stay as fast as ten.
 */
export function listPage (main: HTMLElement): void {
  const records = new Map<string, RunRecord>()
  /** Shown run ids, newest first (run ids sort by creation time). */
  let order: string[] = []
  const shown = new Set<string>(STATUSES)
  let cursor: string | null = null
  let loading = false
  let generation = 0

  const count = h('span', { class: 'muted', id: 'run-count' })
  const filters = h('div', { class: 'filters', role: 'group', 'aria-label': 'Status filter' },
    ...STATUSES.map(s => h('label', { class: `chip status-${s}` },
      h('input', { type: 'checkbox', name: 'status', value: s, checked: true, onchange: (e: Event) => {
        const box = e.target as HTMLInputElement
        if (box.checked) shown.add(s)
        else shown.delete(s)
        void relist()
      } }), s)))
  const spacer = h('div', { class: 'spacer-rows' })
  const rows = h('div', { class: 'rows' })
  const viewport = h('div', { class: 'vlist', id: 'runs', onscroll: () => schedule() }, spacer, rows)
  main.replaceChildren(
    startForm(),
    h('section', { class: 'panel' },
      h('div', { class: 'panel-head' }, h('h2', {}, 'Runs'), count, h('span', { class: 'spacer' }), filters),
      h('div', { class: 'thead' }, h('span', { class: 'c-status' }, 'status'), h('span', { class: 'c-id' }, 'run'), h('span', { class: 'c-mode' }, 'mode'),
        h('span', { class: 'c-msg' }, 'message'), h('span', { class: 'c-time' }, 'created'), h('span', { class: 'c-dur' }, 'took')),
      viewport))

  let frame = 0
  function schedule (): void {
    if (frame === 0) frame = requestAnimationFrame(() => { frame = 0; draw() })
  }

  function draw (): void {
    spacer.style.height = `${order.length * ROW_PX}px`
    const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_PX) - OVERSCAN)
    const last = Math.min(order.length, Math.ceil((viewport.scrollTop + viewport.clientHeight) / ROW_PX) + OVERSCAN)
    rows.style.transform = `translateY(${first * ROW_PX}px)`
    rows.replaceChildren(...order.slice(first, last).map(id => row(records.get(id)!)))
    count.textContent = `${order.length}${cursor === null ? '' : '+'} shown`
    if (last >= order.length - OVERSCAN && cursor !== null && !loading) void more()
  }

  function row (r: RunRecord): HTMLElement {
    const detail = r.error ? `${r.error.code}: ${r.error.message}` : r.message
    return h('a', { class: 'row', href: runHref(r.run_id), 'data-run-id': r.run_id, 'data-status': r.status },
      h('span', { class: 'c-status' }, h('span', { class: `badge status-${r.status}` }, r.status)),
      h('span', { class: 'c-id mono' }, r.run_id),
      h('span', { class: 'c-mode' }, r.mode),
      h('span', { class: 'c-msg', title: detail }, detail),
      h('span', { class: 'c-time mono', title: r.created_at }, clock(r.created_at)),
      h('span', { class: 'c-dur mono' }, IN_FLIGHT.has(r.status) ? '' : span(r.started_at ?? r.created_at, r.ended_at)))
  }

  /** Adds or updates a run (the later copy wins); shown when its status is. */
  function upsert (incoming: RunRecord): void {
    const record = newer(records.get(incoming.run_id), incoming)
    records.set(record.run_id, record)
    const at = position(record.run_id)
    const present = order[at] === record.run_id
    if (shown.has(record.status) && !present) {
      // Older than everything listed while more pages wait: it comes with them.
      if (at === order.length && cursor !== null) return
      order.splice(at, 0, record.run_id)
    } else if (!shown.has(record.status) && present) order.splice(at, 1)
    schedule()
  }

  /** Where `id` is, or goes, in `order` (newest first). */
  function position (id: string): number {
    let lo = 0
    let hi = order.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (order[mid]! > id) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  function query (): string {
    const q = new URLSearchParams({ limit: String(PAGE) })
    if (shown.size < STATUSES.length) q.set('status', [...shown].join(','))
    if (cursor !== null) q.set('cursor', cursor)
    return q.toString()
  }

  /** Starts the list again from its newest page (at start, on a filter change, after the watch says `reset`). */
  async function relist (): Promise<void> {
    const mine = ++generation
    cursor = null
    if (shown.size === 0) {
      order = []
      schedule()
      return
    }
    loading = true
    try {
      const page = await getJson<Page>(`/runs?${query()}`)
      if (mine !== generation) return
      order = []
      records.clear()
      cursor = page.next_cursor
      for (const r of page.runs) upsertLoaded(r)
      viewport.scrollTop = 0
      schedule()
    } catch (err) {
      count.textContent = `could not list: ${(err as Error).message}`
    } finally {
      if (mine === generation) loading = false
    }
  }

  async function more (): Promise<void> {
    const mine = generation
    loading = true
    try {
      const page = await getJson<Page>(`/runs?${query()}`)
      if (mine !== generation) return
      cursor = page.next_cursor
      for (const r of page.runs) upsertLoaded(r)
      schedule()
    } catch (err) {
      count.textContent = `could not list: ${(err as Error).message}`
    } finally {
      if (mine === generation) loading = false
    }
  }

  function upsertLoaded (r: RunRecord): void {
    const record = newer(records.get(r.run_id), r)
    records.set(record.run_id, record)
    const at = position(record.run_id)
    if (order[at] !== record.run_id && shown.has(record.status)) order.splice(at, 0, record.run_id)
  }

  // The watch first: once it is `ready` (or says `reset` after a restart), nothing is missed from the list read next.
  new EventStream('/runs:watch', {
    onFrame: frame => {
      if (frame.event === 'ready' || frame.event === 'reset') void relist()
      else if (frame.event.startsWith('run.')) upsert((JSON.parse(frame.data) as { data: { run: RunRecord } }).data.run)
    },
    onState: (state, detail) => setConnection(state === 'failed' ? 'offline' : state, state === 'failed' ? `offline: ${detail}` : undefined)
  })
  setInterval(schedule, 1000)
}
