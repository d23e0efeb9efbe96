import t from 'tap'
import type { RequestContext } from '../../src/http/index.js'
import { encodeEvent, eventOwner } from '../../src/runs/events.js'
import { FEED_KEEP_EVENTS, RunFeed } from '../../src/runs/watch.js'

/** What a watcher was sent, and a way to make it leave (as a client's abort does). */
interface Watching { frames: string[], leave: () => void }

/** The parts of a request's context a watch uses: the head, writes that the socket always takes, an abort. */
function watch (feed: RunFeed, tenant: string, lastEventId?: string): Watching {
  const frames: string[] = []
  let abort = (): void => undefined
  const ctx = {
    live: true,
    writeHead: () => undefined,
    write: (chunk: string) => { frames.push(chunk); return true },
    onWritable: () => undefined,
    onAbort: (handler: () => void) => { abort = handler },
    end: () => undefined
  } as unknown as RequestContext
  void feed.watch(ctx, tenant, lastEventId, 1 << 20, 60_000)
  return { frames, leave: () => abort() }
}

const kind = (frame: string): string | undefined => /^event: (\S+)$/m.exec(frame)?.[1]
/** The event types a watcher was sent, in order (a replay writes many to a chunk). */
const events = (w: Watching): string[] => w.frames.flatMap(f => [...f.matchAll(/^event: (\S+)$/gm)].map(m => m[1]!))
const id = (frame: string): string => /^id: (\S+)$/m.exec(frame)![1]!

let runs = 0
/** A committed lifecycle event of a new run of `tenant`. */
function transition (feed: RunFeed, tenant: string): void {
  const event = encodeEvent(eventOwner(`run-${++runs}`, tenant), 1, 'run.queued', 'Run queued', '{"status":"queued","run":{}}', '2026-11-24T00:00:00.000Z')
  event.record = '{}'
  feed.publish(event)
}

t.test('past the tenants it keeps, the feed forgets the one recorded longest ago that no one watches; its resume is reset, the others\' exact', async t => {
  const feed = new RunFeed(3)
  const first = watch(feed, 'first')
  const firstAt = id(first.frames.find(f => kind(f) === 'ready')!)
  first.leave()
  const second = watch(feed, 'second')
  const secondAt = id(second.frames.find(f => kind(f) === 'ready')!)
  second.leave()
  const watched = watch(feed, 'watched')
  watch(feed, 'third').leave()
  for (const tenant of ['first', 'second', 'watched']) transition(feed, tenant)

  const resumed = watch(feed, 'second', secondAt)
  t.same(events(resumed), ['run.queued'], 'second, still kept, gets exactly what it missed')
  const forgotten = watch(feed, 'first', firstAt)
  t.same(events(forgotten), ['reset'], 'first was forgotten when third came')
  t.same(events(watched), ['ready', 'run.queued'], 'a tenant being watched is never the one forgotten')
  for (const w of [resumed, forgotten, watched]) w.leave()
})

t.test('a resume from the newest transition dropped is exact; from before it, reset', async t => {
  const feed = new RunFeed()
  watch(feed, 'acme').leave()
  for (let i = 0; i < FEED_KEEP_EVENTS + 2; i++) transition(feed, 'acme')
  const now = watch(feed, 'acme')
  const epoch = id(now.frames.find(f => kind(f) === 'ready')!).split('.')[0]
  const exact = watch(feed, 'acme', `${epoch}.2`)
  t.equal(events(exact).length, FEED_KEEP_EVENTS)
  t.ok(events(exact).every(e => e === 'run.queued'))
  const late = watch(feed, 'acme', `${epoch}.1`)
  t.same(events(late), ['reset'])
  for (const w of [now, exact, late]) w.leave()
})

t.test('each tenant\'s ids count its own transitions: another tenant\'s activity leaves no gap and shares no prefix', async t => {
  const feed = new RunFeed()
  const acme = watch(feed, 'acme')
  const other = watch(feed, 'other')
  transition(feed, 'acme')
  for (let i = 0; i < 5; i++) transition(feed, 'other')
  transition(feed, 'acme')
  const ids = (w: Watching): string[] => w.frames.filter(f => kind(f) === 'run.queued').map(id)
  const [acmePrefix] = id(acme.frames.find(f => kind(f) === 'ready')!).split('.')
  const [otherPrefix] = id(other.frames.find(f => kind(f) === 'ready')!).split('.')
  t.same(ids(acme), [`${acmePrefix}.1`, `${acmePrefix}.2`])
  t.equal(ids(other).at(-1), `${otherPrefix}.5`)
  t.not(acmePrefix, otherPrefix)
  for (const w of [acme, other]) w.leave()
})

t.test('a tenant forgotten and recorded again numbers anew under a new prefix: its old ids are reset, its old transitions never replayed', async t => {
  const feed = new RunFeed(1)
  const first = watch(feed, 'first')
  const oldAt = id(first.frames.find(f => kind(f) === 'ready')!)
  first.leave()
  for (let i = 0; i < 3; i++) transition(feed, 'first')
  watch(feed, 'second').leave()
  const again = watch(feed, 'first')
  const newAt = id(again.frames.find(f => kind(f) === 'ready')!)
  t.not(newAt.split('.')[0], oldAt.split('.')[0])
  transition(feed, 'first')
  const resumed = watch(feed, 'first', newAt)
  t.same(events(resumed), ['run.queued'], 'only the transition of this keeping')
  const reset = watch(feed, 'first', oldAt)
  t.same(events(reset), ['reset'])
  for (const w of [again, resumed, reset]) w.leave()
})
