import { postJson } from './api.js'
import { h } from './dom.js'
import { runHref } from './place.js'

const DEFAULT_OPTIONS: Readonly<Record<string, string>> = {
  echo: '{"steps": 5, "delay_ms": 800}',
  agentic: '{}',
  auto: '{}'
}

/** Start a run: message, mode and the mode's options (JSON); the new run appears in the list by itself. */
export function startForm (): HTMLElement {
  const message = h('textarea', { name: 'message', rows: 2, required: true, placeholder: 'What should the run do?' })
  const mode = h('select', { name: 'mode' }, ...Object.keys(DEFAULT_OPTIONS).map(m => h('option', { value: m }, m)))
  const options = h('textarea', { name: 'options', rows: 2, class: 'mono', spellcheck: 'false' })
  options.value = DEFAULT_OPTIONS['echo']!
  mode.addEventListener('change', () => { options.value = DEFAULT_OPTIONS[mode.value] ?? '{}' })
  const conversation = h('input', { name: 'conversation_id', placeholder: 'optional' })
  const note = h('p', { class: 'note', id: 'start-note' })
  const form = h('form', { class: 'panel start', id: 'start' },
    h('h2', {}, 'Start a run'),
    h('div', { class: 'grid' },
      h('label', { class: 'wide' }, 'Message', message),
      h('label', {}, 'Mode', mode),
      h('label', {}, 'Conversation', conversation),
      h('label', { class: 'wide' }, 'Options (JSON)', options)),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Start'), note))
  form.addEventListener('submit', event => {
    event.preventDefault()
    let parsed: unknown
    try {
      parsed = JSON.parse(options.value.trim() === '' ? '{}' : options.value)
    } catch {
      note.textContent = 'Options must be JSON.'
      return
    }
    const body = { message: message.value, mode: mode.value, options: parsed, conversation_id: conversation.value.trim() === '' ? null : conversation.value.trim() }
    postJson<{ run_id: string }>('/runs:start', body).then(started => {
      note.replaceChildren('Started ', h('a', { href: runHref(started.run_id) }, started.run_id))
      message.value = ''
    }, err => { note.textContent = `Not started: ${(err as Error).message}` })
  })
  return form
}
