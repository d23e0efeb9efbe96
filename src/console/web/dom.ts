type Child = Node | string | null | undefined | false
type Attrs = Record<string, string | number | boolean | undefined | EventListener>

/** An element with attributes (`on…` ones become listeners) and children; strings become text, never markup. */
export function h<K extends keyof HTMLElementTagNameMap> (tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue
    if (typeof value === 'function') el.addEventListener(name.slice(2), value)
    else if (value === true) el.setAttribute(name, '')
    else el.setAttribute(name, String(value))
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child)
  return el
}

const SVG = 'http://www.w3.org/2000/svg'

export function svg (tag: string, attrs: Record<string, string | number> = {}): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value))
  return el
}

/** `HH:MM:SS.mmm` of an ISO time, in the browser's zone. */
export function clock (iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0')
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

/** A short span of time: `850 ms`, `12.4 s`, `3 min 5 s`. */
export function span (fromIso: string | null, toIso: string | null): string {
  if (!fromIso) return ''
  const ms = (toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso)
  if (ms < 1000) return `${ms} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

export function setConnection (state: 'connecting' | 'live' | 'reconnecting' | 'ended' | 'offline', text?: string): void {
  const el = document.getElementById('conn')!
  el.dataset['state'] = state
  el.textContent = text ?? { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', ended: 'ended', offline: 'offline' }[state]
}
