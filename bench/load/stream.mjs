// The load tool's telemetry streams: `connections` WebSockets on
// /v1/asset/track:stream, records sent round robin over them, each with the
// next sequence number of its connection, and each send resolved by the
// server's answer for that sequence number (an acknowledgment range that
// covers it, or its error frame). A stream closed by the server (4401, its
// token expired; 1001, a shutdown) is opened again, with a fresh token, on
// the next send; the records it had out are answered `closed`.
import { WebSocket } from 'undici'

export function streams ({ url, prefix, connections, session, runId }) {
  const wsUrl = `${url.replace(/^http/, 'ws')}${prefix}/v1/asset/track:stream`
  const slots = Array.from({ length: connections }, (_, i) => ({ id: `load-${runId}-s${i}`, ws: undefined, opening: undefined, seq: 0, waiting: new Map() }))
  let next = 0

  function open (slot) {
    slot.opening ??= session.current().then(({ token, generation }) => new Promise((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}`, 'x-stream-id': slot.id } })
      ws.addEventListener('open', () => { slot.ws = ws; slot.opening = undefined; resolve(ws) })
      ws.addEventListener('error', () => { slot.opening = undefined; reject(Object.assign(new Error('upgrade refused'), { code: 'ws_refused' })) })
      ws.addEventListener('message', e => answered(slot, JSON.parse(String(e.data))))
      ws.addEventListener('close', e => {
        if (e.code === 4401) session.refresh(generation)
        if (slot.ws === ws) slot.ws = undefined
        for (const done of slot.waiting.values()) done(`closed ${e.code}`)
        slot.waiting.clear()
      })
    }))
    return slot.opening
  }

  function answered (slot, frame) {
    if (frame.status === 'accepted') {
      for (let s = frame.from; s <= frame.to; s++) {
        slot.waiting.get(s)?.('accepted')
        slot.waiting.delete(s)
      }
    } else if (frame.seq !== undefined) {
      slot.waiting.get(frame.seq)?.(frame.status === 'error' ? `error: ${frame.message}` : frame.status)
      slot.waiting.delete(frame.seq)
    }
  }

  return {
    /** Resolves to 'accepted', or what the server said instead. */
    async send (record) {
      const slot = slots[next++ % slots.length]
      const ws = slot.ws ?? await open(slot)
      const seq = ++slot.seq
      const answer = new Promise(resolve => slot.waiting.set(seq, resolve))
      ws.send(`{"seq":${seq},"record":${record}}`)
      return answer
    },
    close () {
      for (const slot of slots) slot.ws?.close()
    }
  }
}
