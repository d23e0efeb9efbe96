export interface SseEvent { id?: string, event?: string, data?: string }

/** Reads an SSE response until it ends (or `until` says stop); comments are skipped. */
export async function readSse (res: Response, until?: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const events: SseEvent[] = []
  const decoder = new TextDecoder()
  let buffer = ''
  const reader = res.body!.getReader()
  try {
    while (true) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        const e: SseEvent = {}
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue
          const i = line.indexOf(': ')
          if (i > 0) e[line.slice(0, i) as keyof SseEvent] = line.slice(i + 2)
        }
        if (e.event) events.push(e)
      }
      if (until?.(events)) break
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
  return events
}
